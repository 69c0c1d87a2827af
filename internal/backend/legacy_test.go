package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// oldKey is the default LOCK_KEY, which older versions used as it is.
const oldKey = "lockworker:leader"

// open opens a backend for env (REDIS_URLS and the like), closed at test end.
func open(t *testing.T, env ...string) *Backend {
	t.Helper()
	cfg, err := config.Load(config.Getenv(append(env, "LOCK_TTL=2s", "RENEW_INTERVAL=500ms")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// olderVersion is the lock and the queue as a lockworker before hash tags
// kept them: the same code, under the untagged names.
type olderVersion struct {
	lock  *redislock.Locker
	queue *jobs.Queue
}

func newOlderVersion(t *testing.T, clients []*redis.Client) *olderVersion {
	t.Helper()
	var nodes []redis.Scripter
	for _, c := range clients {
		nodes = append(nodes, c)
	}
	l, err := redislock.New(redislock.Config{Nodes: nodes, Key: oldKey, TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q, err := jobs.New(jobs.Config{Client: clients[0], Prefix: oldKey + ":jobs", EpochKey: oldKey + ":epoch"})
	if err != nil {
		t.Fatal(err)
	}
	return &olderVersion{lock: l, queue: q}
}

// lead has the older version lead and process "a" (committed), "b"
// (dead-lettered) and "c" (committed) of jobs a, b, c, d, leaving d
// pending with one delivery started. It returns the lease, still held.
func (o *olderVersion) lead(t *testing.T) *redislock.Lease {
	t.Helper()
	ctx := t.Context()
	for range 3 { // earlier leaderships: the epoch is history to keep
		lease, err := o.lock.Acquire(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		_ = o.lock.Release(ctx, lease)
	}
	lease, err := o.lock.Acquire(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "b", "c", "d"} {
		if _, err := o.queue.Enqueue(ctx, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	work, stop := context.WithCancel(ctx)
	defer stop()
	w, err := jobs.NewWorker(jobs.WorkerConfig{Queue: o.queue, MaxAttempts: 1, Handler: jobs.HandlerFunc(
		func(_ context.Context, j jobs.Job, _ jobs.Lease) error {
			switch string(j.Payload) {
			case "b":
				return errors.New("b fails")
			case "d":
				stop() // leadership ends mid-job: d stays pending
				return errors.New("interrupted")
			}
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Process(work, lease)
	return lease
}

// TestMigrateMovesOlderKeys: a single node that an older lockworker used
// (untagged names) is taken over by this one without losing the epoch,
// the queue's position, counters or dead letters; while the older one
// leads nothing moves, and afterwards it can neither lead nor enqueue.
func TestMigrateMovesOlderKeys(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	old := newOlderVersion(t, []*redis.Client{s.Client()})
	lease := old.lead(t)
	ctx := t.Context()

	b := open(t, "REDIS_URLS="+s.URL())
	if _, err := b.Migrate(ctx); !errors.Is(err, ErrLegacyLeader) {
		t.Fatalf("migrate while the older version leads: %v, want ErrLegacyLeader", err)
	}
	if err := old.lock.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	m, err := b.Migrate(ctx)
	if err != nil || !m.Moved || m.Epoch != lease.Token() || m.DeadLetters != 1 {
		t.Fatalf("migrate: %+v, %v; want moved, epoch %d, 1 dead letter", m, err, lease.Token())
	}
	if again, err := b.Migrate(ctx); err != nil || again.Moved {
		t.Fatalf("second migrate: %+v, %v; want nothing to do", again, err)
	}
	st, err := b.Queue.Stats(ctx)
	if err != nil || st.Pending != 1 || st.Committed != 2 || st.DeadLettered != 1 || st.Epoch != lease.Token() || st.Paused {
		t.Fatalf("stats after the move: %+v, %v", st, err)
	}
	dead, err := b.Queue.DeadLetters(ctx, 10)
	if err != nil || len(dead) != 1 || string(dead[0].Payload) != "b" {
		t.Fatalf("dead letters after the move: %+v, %v", dead, err)
	}

	// This version leads with a token above every older one and resumes
	// the queue where the older one stopped: d, once.
	next, err := b.Locker.Acquire(ctx, "new")
	if err != nil || next.Token() <= lease.Token() {
		t.Fatalf("acquire after the move: %v, %v; want a token above %d", next, err, lease.Token())
	}
	var got []string
	work, stop := context.WithCancel(ctx)
	w, _ := jobs.NewWorker(jobs.WorkerConfig{Queue: b.Queue, Handler: jobs.HandlerFunc(
		func(_ context.Context, j jobs.Job, _ jobs.Lease) error {
			got = append(got, string(j.Payload))
			stop()
			return nil
		}), PollInterval: 10 * time.Millisecond})
	_ = w.Process(work, next)
	if strings.Join(got, ",") != "d" {
		t.Fatalf("the new leader processed %v, want [d]", got)
	}

	// The older version is shut out: the old lock is taken for good, and
	// an enqueue under the old names fails instead of being lost.
	if _, err := old.lock.Acquire(ctx, "old"); !errors.Is(err, redislock.ErrNotAcquired) {
		t.Fatalf("older version acquire after the move: %v, want not acquired", err)
	}
	if _, err := old.queue.Enqueue(ctx, []byte("lost?")); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("older version enqueue after the move: %v, want WRONGTYPE", err)
	}
}

// TestMigrateRedlock: with Redlock the old lock is marked on a quorum of
// nodes before the queue moves, so no older replica wins it again.
func TestMigrateRedlock(t *testing.T) {
	var clients []*redis.Client
	var urls []string
	for range 3 {
		s := redistest.Start(t, redistest.Options{})
		clients = append(clients, s.Client())
		urls = append(urls, s.URL())
	}
	old := newOlderVersion(t, clients)
	lease := old.lead(t)
	ctx := t.Context()
	b := open(t, "REDIS_URLS="+strings.Join(urls, ","))
	if _, err := b.Migrate(ctx); !errors.Is(err, ErrLegacyLeader) {
		t.Fatalf("migrate while the older version leads: %v, want ErrLegacyLeader", err)
	}
	if err := old.lock.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if m, err := b.Migrate(ctx); err != nil || !m.Moved {
		t.Fatalf("migrate: %+v, %v", m, err)
	}
	for i, c := range clients {
		if v := c.Get(ctx, oldKey).Val(); !strings.HasPrefix(v, "lockworker: moved to ") {
			t.Fatalf("node %d: old lock %q, want the mark", i, v)
		}
	}
	next, err := b.Locker.Acquire(ctx, "new")
	if err != nil || next.Token() <= lease.Token() {
		t.Fatalf("acquire after the move: %v, %v; want a token above %d", next, err, lease.Token())
	}
}

// TestMigrateNothingToMove: a fresh Redis, and a LOCK_KEY that carries its
// own hash tag (its names never changed), need no move and write nothing.
func TestMigrateNothingToMove(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	for _, env := range [][]string{{"REDIS_URLS=" + s.URL()}, {"REDIS_URLS=" + s.URL(), "LOCK_KEY=app:{leader}"}} {
		b := open(t, env...)
		if m, err := b.Migrate(t.Context()); err != nil || m.Moved {
			t.Fatalf("%v: %+v, %v; want nothing to do", env, m, err)
		}
	}
	if n := s.Client().DBSize(t.Context()).Val(); n != 0 {
		t.Fatalf("%d keys written to a fresh Redis", n)
	}
}
