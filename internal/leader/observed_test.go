package leader

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// regressions counts EpochRegression calls.
type regressions struct {
	nopObserver
	n atomic.Int64
}

func (r *regressions) EpochRegression() { r.n.Add(1) }

// TestObservedTokenAfterFlush is the FLUSHALL under a working
// leader: w2 leads with token N and its job is in flight; w1, whose own
// highest token is below N, saw N in the lock's value while it waited.
// Redis is flushed (the lock, the epoch, everything). w1 then acquires
// with a token above N, never N itself, logs the loss at ERROR once and
// counts it; a second acquire after it logs nothing more.
func TestObservedTokenAfterFlush(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr(),
		MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{c},
		Keys: keyspace.MustNew("lw:observed").Lease(), TTL: 10 * time.Second, NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	newLeader := func(id string, work Work, obs Observer, logs *tail.Buffer) *Leader {
		l, err := New(Config{Lock: locker, WorkerID: id, RetryInterval: 100 * time.Millisecond, Work: work, Observer: obs,
			Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ctx := t.Context()
	idle := func(ctx context.Context, _ Lease) error { <-ctx.Done(); return nil }

	// w1 leads first (token 1), then steps aside; w2's leaderships follow
	// until its token is 3: w1's own highest stays 1.
	w1logs, w1obs := &tail.Buffer{}, &regressions{}
	w1 := newLeader("w1", idle, w1obs, w1logs)
	if err := w1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	inJob := make(chan int64, 1)
	w2 := newLeader("w2", func(ctx context.Context, lease Lease) error {
		inJob <- lease.Token()
		<-ctx.Done() // a long job
		return nil
	}, nil, &tail.Buffer{})
	for range 2 {
		if err := w2.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w2.StartWork(func(error) {})
	n := <-inJob
	t.Cleanup(func() { _ = w2.StopWork(context.Background()); _ = w2.Release(context.Background()) })

	if err := w1.Acquire(ctx); !HeldByAnother(err) {
		t.Fatalf("w1 while w2 works: %v, want held", err)
	}
	if got := w1.Observed(); got != n {
		t.Fatalf("w1 observed %d, want w2's token %d from the lock's value", got, n)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w1.Release(context.Background()) })
	got := w1.HeldLease().Token()
	if got <= n {
		t.Fatalf("after FLUSHALL w1 got token %d while w2 works with %d: a token handed out twice", got, n)
	}
	if w1obs.n.Load() != 1 || strings.Count(w1logs.String(), "Redis lost its data") != 1 || !strings.Contains(w1logs.String(), "level=ERROR") {
		t.Fatalf("%d regressions counted, logs:\n%s", w1obs.n.Load(), w1logs)
	}
	if err := w1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if w1obs.n.Load() != 1 || strings.Count(w1logs.String(), "Redis lost its data") != 1 {
		t.Fatalf("a second acquire after the repair counted or logged again:\n%s", w1logs)
	}
}
