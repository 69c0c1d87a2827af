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
// first fenced write (a step that releases lost claims and claims
// nothing), which raises the fence above every older token. A token alone
// fences no one (Kleppmann's rule).
func takeOver(t testing.TB, q *Queue) int64 {
	t.Helper()
	tok := becomeLeader(t, q.cfg.Client)
	if _, err := q.step(context.Background(), stepArgs{token: tok, runMax: 1, recover: true}); err != nil {
		t.Fatalf("the newer leader's first step: %v", err)
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

// queue builds a Queue (one partition: keyless jobs are serial) and its
// Worker with fast test timings; mod adjusts the worker's config.
func (e *env) queue(t testing.TB, h Handler, mod func(*WorkerConfig)) *testQueue {
	t.Helper()
	return e.queueOf(t, Config{Client: e.c, Keys: testKeys}, h, mod)
}

// queueOf is queue with the queue's config given.
func (e *env) queueOf(t testing.TB, qc Config, h Handler, mod func(*WorkerConfig)) *testQueue {
	t.Helper()
	q, err := New(qc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := WorkerConfig{
		Queue:        q,
		Handler:      h,
		MaxAttempts:  3,
		Batch:        1, // one job per step; the batch tests set theirs
		Retry:        backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond},
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

// enqueue adds n keyless jobs, "job 0" to "job n-1".
func (e *env) enqueue(t testing.TB, q *testQueue, n int) []string {
	t.Helper()
	return e.enqueueKey(t, q, "", "job ", n)
}

// enqueueKey adds n jobs of key, their payloads prefix followed by 0 to
// n-1.
func (e *env) enqueueKey(t testing.TB, q *testQueue, key, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		id, err := q.Enqueue(context.Background(), key, []byte(prefix+strconv.Itoa(i)))
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
	// returned is closed once Process returned, with its error in result:
	// stop must not wait on ch, whose one value the test may have taken.
	returned := make(chan struct{})
	var result error
	go func() {
		result = q.Process(ctx, lease)
		close(returned)
		ch <- result
	}()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case <-returned:
				err = result
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

// waitCommitted waits for n commits, reading the counter with a plain
// command (the tests that count script calls count steps).
func waitCommitted(t testing.TB, q *testQueue, n int64) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d commits", n), func() bool {
		c, err := q.Queue.cfg.Client.HGet(context.Background(), q.counters, "committed").Int64()
		return err == nil && c >= n
	})
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

// claimOne is a step that claims one run of at most one job, releasing
// lost claims first as a leadership's first step does; nil when no group
// may run.
func (q *Queue) claimOne(ctx context.Context, token int64) (*claim, error) {
	s, err := q.step(ctx, stepArgs{token: token, want: 1, runMax: 1, recover: true})
	if err != nil || len(s.claimed) == 0 {
		return nil, err
	}
	return &s.claimed[0], nil
}

// commitRun is a step that records c as committed and claims nothing.
func (q *Queue) commitRun(ctx context.Context, token int64, c *claim) error {
	_, err := q.step(ctx, stepArgs{token: token, outcomes: []outcome{committed(*c)}})
	return err
}

// mustStep runs one step and fails the test on an error.
func mustStep(t testing.TB, q *testQueue, a stepArgs) stepReply {
	t.Helper()
	s, err := q.step(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// committed is the outcome of a run whose every claimed job was committed
// after its first delivery.
func committed(c claim) outcome {
	last := c.jobs[len(c.jobs)-1]
	return outcome{member: c.member, first: c.jobs[0].ID, popped: len(c.jobs), last: last.ID, lastAttempts: last.Attempt, end: endDone}
}

// noAttemptsLeft: once every job is finished, nothing is left of the
// claims, the delivery counts or the stale counts.
func noAttemptsLeft(t testing.TB, e *env, q *testQueue) {
	t.Helper()
	for _, k := range []string{q.attempts, q.inflight, q.stale, q.ready, q.parked} {
		if n, err := e.c.Exists(t.Context(), k).Result(); err != nil || n != 0 {
			t.Fatalf("%s still exists (%v) with no job pending", k, err)
		}
	}
}

// effectIDs is the IDs of the fenced store's effects, in order, and their
// tokens.
func effectIDs(t testing.TB, e *env) (ids []string, tokens []int64) {
	t.Helper()
	for _, ef := range e.store.effects(t) {
		ids = append(ids, ef.id)
		tokens = append(tokens, ef.token)
	}
	return ids, tokens
}
