package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// testKeys names the test queue's keys, and the epoch its tokens come from.
var testKeys = keyspace.MustNew("lockworker:leader").Lease()

// fakeLease is a lease the test controls: valid until its deadline or until
// revoked.
type fakeLease struct {
	token    int64
	mu       sync.Mutex
	deadline time.Time
	revoked  atomic.Bool
}

func newLease(token int64, ttl time.Duration) *fakeLease {
	return &fakeLease{token: token, deadline: time.Now().Add(ttl)}
}

func (l *fakeLease) Token() int64 { return l.token }
func (l *fakeLease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}
func (l *fakeLease) Valid() bool { return !l.revoked.Load() && time.Now().Before(l.Deadline()) }

var _ Lease = (*fakeLease)(nil)

// becomeLeader simulates a lock acquisition: INCR the epoch, the new value
// is the token.
func becomeLeader(t testing.TB, c redis.Cmdable) int64 {
	t.Helper()
	tok, err := c.Incr(context.Background(), testKeys.Epoch()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// takeOver is a newer leader as the store sees it: a new token, and its
// first fenced write (a claim), which raises the fence above every older
// token. A token alone fences no one (Kleppmann's rule).
func takeOver(t testing.TB, q *Queue) int64 {
	t.Helper()
	tok := becomeLeader(t, q.cfg.Client)
	if _, err := q.claim(context.Background(), tok); err != nil {
		t.Fatalf("the newer leader's claim: %v", err)
	}
	return tok
}

// fencedStore is the handlers' external store: it accepts an effect only
// with a token at least the highest it has seen (a Lua check, like a real
// fenced store) and keeps every accepted effect in order.
type fencedStore struct {
	c redis.Cmdable
}

var fencedWrite = redis.NewScript(`
local high = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < high then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2] .. ' ' .. ARGV[1])
return 1`)

func (s fencedStore) write(ctx context.Context, id string, token int64) error {
	ok, err := fencedWrite.Run(ctx, s.c, []string{"test:store:high", "test:store:effects"}, token, id).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fmt.Errorf("store: %w", ErrStaleToken)
	}
	return nil
}

type effect struct {
	id    string
	token int64
}

func (s fencedStore) effects(t testing.TB) []effect {
	t.Helper()
	raw, err := s.c.LRange(context.Background(), "test:store:effects", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]effect, len(raw))
	for i, r := range raw {
		id, tok, _ := strings.Cut(r, " ")
		out[i].id = id
		out[i].token, _ = strconv.ParseInt(tok, 10, 64)
	}
	return out
}

// env is one redis-server with a queue on it.
type env struct {
	srv   *redistest.Server
	c     *redis.Client
	store fencedStore
}

func newEnv(t testing.TB) *env {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	return &env{srv: s, c: c, store: fencedStore{c}}
}

// testQueue is a queue and the worker that processes it.
type testQueue struct {
	*Queue
	*Worker
}

// queue builds a Queue and its Worker with fast test timings; mod adjusts
// the worker's config.
func (e *env) queue(t testing.TB, h Handler, mod func(*WorkerConfig)) *testQueue {
	t.Helper()
	q, err := New(Config{Client: e.c, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	cfg := WorkerConfig{
		Queue:        q,
		Handler:      h,
		MaxAttempts:  3,
		Batch:        1, // one job per step; the batch tests set theirs
		Backoff:      backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond},
		PollInterval: 10 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testQueue{Queue: q, Worker: w}
}

// lastCommitted is the ID of the last committed job, "" before any.
func lastCommitted(t testing.TB, q *testQueue) string {
	t.Helper()
	id, err := q.Queue.cfg.Client.HGet(context.Background(), q.last, "id").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return id
}

func (e *env) enqueue(t testing.TB, q *testQueue, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		id, err := q.Enqueue(context.Background(), "", []byte("job "+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// process runs q.Process in the background; the returned func cancels it
// and returns its error. Cleanup makes sure it has returned.
func process(t testing.TB, q *testQueue, lease Lease) (stop func() error, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- q.Process(ctx, lease) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-ch:
			case <-time.After(10 * time.Second):
				err = errors.New("Process did not return within 10s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}

func stats(t testing.TB, q *testQueue) figures.Queue {
	t.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitCommitted(t testing.TB, q *testQueue, n int64) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d commits", n), func() bool { return stats(t, q).Committed >= n })
}

// snapshot DUMPs every key of the queue, to show that a write changed
// nothing: every key of its lease's keyspace but the lock's own (the lock
// key, the epoch, its tag and the fence).
func snapshot(t testing.TB, c *redis.Client, q *Queue) map[string]string {
	t.Helper()
	ctx := context.Background()
	k := q.cfg.Keys
	all, err := c.Keys(ctx, k.Lock()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(all))
	for _, key := range all {
		if key == k.Lock() || key == k.Epoch() || key == k.EpochLast() || key == k.Fence() {
			continue
		}
		d, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[key] = d
	}
	return out
}

// signal is a one-shot event a handler reports to the test.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }
func (s *signal) fire()  { s.once.Do(func() { close(s.ch) }) }
func (s *signal) wait(t testing.TB, what string) {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// claim is a step that records nothing and claims one job, as a
// leadership's first step does; nil when the queue is empty.
func (q *Queue) claim(ctx context.Context, token int64) (*entry, error) {
	s, err := q.step(ctx, token, batch{}, 1)
	if err != nil || len(s.claimed) == 0 {
		return nil, err
	}
	return s.claimed[0], nil
}

// commit is a step that records e, the job after the store's position, as
// committed after its first attempt, and claims nothing.
func (q *Queue) commit(ctx context.Context, token int64, e *entry) error {
	from, err := q.cfg.Client.Get(ctx, q.position).Result()
	if errors.Is(err, redis.Nil) {
		from, err = "0-0", nil
	}
	if err != nil {
		return err
	}
	_, err = q.step(ctx, token, batch{from: from, done: []outcome{{e: e, attempts: 1}}}, 0)
	return err
}
