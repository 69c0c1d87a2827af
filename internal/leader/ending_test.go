package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// endingRig runs the real machine and leader over one real redis-server
// with the given work; it records the tokens the work saw and the
// transitions.
type endingRig struct {
	ld     *Leader
	locker *redislock.Locker
	admin  *redis.Client
	logs   *tail.Buffer
	tokens chan int64
	// notices are the lock's release notices, subscribed to before the
	// machine starts so the first leadership's cannot be missed.
	notices <-chan *redis.Message

	mu    sync.Mutex
	steps []string
}

func newEndingRig(t *testing.T, work func(ctx context.Context, lease Lease) error) *endingRig {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	r := &endingRig{admin: s.Client(), logs: &tail.Buffer{}, tokens: make(chan int64, 64)}
	var err error
	r.locker, err = redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:ending").Lease(), TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.ld, err = New(Config{Lock: r.locker, WorkerID: "w", RetryInterval: 400 * time.Millisecond, Logger: log,
		Work: func(ctx context.Context, lease Lease) error {
			r.tokens <- lease.Token()
			return work(ctx, lease)
		}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.New(machine.Config{
		Acquire: r.ld.Acquire, Renew: r.ld.Renew, Release: r.ld.Release,
		StartWork: r.ld.StartWork, StopWork: r.ld.StopWork,
		RenewInterval: 500 * time.Millisecond, RetryDelay: r.ld.RetryDelay, Logger: log,
		OnTransition: func(from, to machine.State, tr machine.Trigger) {
			r.mu.Lock()
			r.steps = append(r.steps, from.String()+">"+to.String()+":"+tr.String())
			r.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := r.admin.Subscribe(t.Context(), keyspace.MustNew("lw:ending").Lease().ReleasedChannel())
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	r.notices = ps.Channel()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r *endingRig) has(step string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.steps {
		if s == step {
			return true
		}
	}
	return false
}

// TestWorkThatEndsEndsTheLeadership: work that returns with the lease
// still valid (here: a stale token, after the epoch moved past it) is
// stopped, the lock is released with a notice, and the replica acquires
// afresh with a new token: it never keeps the lock without working.
func TestWorkThatEndsEndsTheLeadership(t *testing.T) {
	var calls sync.Mutex
	n := 0
	r := newEndingRig(t, func(ctx context.Context, lease Lease) error {
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			return errors.New("stale fencing token")
		}
		<-ctx.Done()
		return nil
	})
	first := receiveToken(t, r.tokens, 5*time.Second)
	select {
	case m := <-r.notices:
		if m.Payload != "w" {
			t.Fatalf("release notice %q", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leadership whose work ended did not release the lock with a notice")
	}
	second := receiveToken(t, r.tokens, 5*time.Second)
	if second <= first {
		t.Fatalf("tokens %d then %d: want a fresh, higher one", first, second)
	}
	for _, step := range []string{"working>cleanup:WORK_ENDED", "cleanup>releasing_lock:WORK_STOPPED",
		"releasing_lock>waiting_to_acquire_lock:LOCK_RELEASED"} {
		if !r.has(step) {
			t.Errorf("no %s transition", step)
		}
	}
	if !strings.Contains(r.logs.String(), `trigger=WORK_ENDED err="stale fencing token"`) {
		t.Errorf("why the work ended is not logged on its transition:\n%s", r.logs.String())
	}
	waitUntil(t, 5*time.Second, "leading again", func() bool { return r.ld.Status().Leader })
}

// TestWorkPanicEndsTheLeadership: a panic in the work is logged once with
// its stack and ends that leadership, not the process.
func TestWorkPanicEndsTheLeadership(t *testing.T) {
	var once sync.Once
	r := newEndingRig(t, func(ctx context.Context, lease Lease) error {
		once.Do(func() { panic("boom") })
		<-ctx.Done()
		return nil
	})
	first := receiveToken(t, r.tokens, 5*time.Second)
	second := receiveToken(t, r.tokens, 5*time.Second)
	if second <= first {
		t.Fatalf("tokens %d then %d", first, second)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, `msg="work panicked" panic=boom`); n != 1 {
		t.Fatalf("panic logged %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, " [running]:"); n != 1 || !strings.Contains(logs, "runWork") {
		t.Fatalf("want the stack once (%d stacks):\n%s", n, logs)
	}
	if !strings.Contains(logs, `trigger=WORK_ENDED err="leader: work panicked: boom"`) {
		t.Fatalf("the panic did not end the leadership:\n%s", logs)
	}
}

// TestStatusFollowsTheWork: once the work has ended, Status stops
// reporting leadership before the machine hears of it.
func TestStatusFollowsTheWork(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:status").Lease(), TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	ld, err := New(Config{Lock: locker, WorkerID: "w", RetryInterval: time.Second,
		Work: func(ctx context.Context, _ Lease) error { <-release; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	ended := make(chan Status, 1)
	var why error
	ld.StartWork(func(err error) { why = err; ended <- ld.Status() })
	if !ld.Status().Leader {
		t.Fatal("not leader while the work runs")
	}
	close(release)
	if st := <-ended; st.Leader {
		t.Fatalf("status when the machine is told the work ended: %+v, want not leader", st)
	}
	if !errors.Is(why, ErrWorkReturned) {
		t.Fatalf("ended with %v, want ErrWorkReturned", why)
	}
	if err := ld.StopWork(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ld.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestQuickEndsBackOff: each leadership whose work ends at once makes the
// next wait longer (jittered, bounded at 4 retry intervals), and deaf to
// release notices; a healthy leadership starts the count again.
func TestQuickEndsBackOff(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:backoff").Lease(), TTL: 2 * time.Second,
		NodeTimeout: time.Second}) // generous: a busy host's slow reply is not what this test is about
	if err != nil {
		t.Fatal(err)
	}
	const interval = 4 * time.Second // unit: 1s
	healthy := false
	ld, err := New(Config{Lock: locker, WorkerID: "w", RetryInterval: interval,
		Work: func(ctx context.Context, _ Lease) error {
			if healthy {
				<-ctx.Done() // runs until its lease deadline
				return nil
			}
			return errors.New("cannot work")
		}})
	if err != nil {
		t.Fatal(err)
	}
	lead := func() {
		t.Helper()
		if err := ld.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		ld.StartWork(func(err error) { ended <- err })
		<-ended
		if ld.WantsNotice() {
			t.Fatal("hears release notices between the end of its work and its wait (its own release's among them)")
		}
		if err := ld.StopWork(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := ld.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	within := func(d, lo, hi time.Duration) {
		t.Helper()
		if d < lo || d >= hi {
			t.Fatalf("RetryDelay %s, want in [%s, %s)", d, lo, hi)
		}
	}
	for i, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second} {
		lead()
		within(ld.RetryDelay(), hi/2, hi)
		if ld.WantsNotice() {
			t.Fatalf("after quick failure %d: hears release notices during its back-off", i+1)
		}
	}
	// A wait not preceded by a failed leadership is the plain interval.
	within(ld.RetryDelay(), interval*9/10, interval*11/10+1)

	healthy = true
	lead()
	within(ld.RetryDelay(), 500*time.Millisecond, time.Second)
}

// TestAcquireErrorsBackOff: consecutive acquire errors make the wait grow
// from one retry interval to 4; a held lock in between keeps the count
// but caps the wait at the holder's lease; an acquired lock ends it.
func TestAcquireErrorsBackOff(t *testing.T) {
	lock := &failingLock{err: errors.New("redislock: node a: connection refused")}
	ld, err := New(Config{Lock: lock, WorkerID: "w", RetryInterval: time.Second,
		Work: func(context.Context, Lease) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if err := ld.Acquire(t.Context()); err == nil {
			t.Fatal("Acquire succeeded")
		}
		if d := ld.RetryDelay(); d < hi/2 || d >= hi {
			t.Fatalf("RetryDelay %s, want in [%s, %s)", d, hi/2, hi)
		}
		if !ld.WantsNotice() {
			t.Fatal("a follower backing off from errors does not hear release notices")
		}
	}
	lock.err = &redislock.HeldError{TTL: time.Minute}
	_ = ld.Acquire(t.Context())
	if d := ld.RetryDelay(); d < 2*time.Second || d >= 4*time.Second {
		t.Fatalf("RetryDelay after held %s, want the back-off kept in [2s, 4s)", d)
	}
	lock.err = &redislock.HeldError{TTL: 300 * time.Millisecond}
	_ = ld.Acquire(t.Context())
	if d := ld.RetryDelay(); d < 300*time.Millisecond || d > 325*time.Millisecond {
		t.Fatalf("RetryDelay with the holder's lease ending in 300ms: %s", d)
	}
}

// TestReplicaErrorsRetrySoon: an attempt whose token did not reach a
// replica (the lock is free, a replica is still joining) is retried after
// 100 ms, backing off to 2 s but never past the retry interval; another
// error afterwards backs off as errors do.
func TestReplicaErrorsRetrySoon(t *testing.T) {
	lock := &failingLock{err: fmt.Errorf("redislock: node a: %w: 0 of 1 acknowledged", redislock.ErrReplicas)}
	ld, err := New(Config{Lock: lock, WorkerID: "w", RetryInterval: 30 * time.Second,
		Work: func(context.Context, Lease) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, hi := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if err := ld.Acquire(t.Context()); err == nil {
			t.Fatal("Acquire succeeded")
		}
		if d := ld.RetryDelay(); d < hi/2 || d >= hi {
			t.Fatalf("RetryDelay %s, want in [%s, %s)", d, hi/2, hi)
		}
	}
	lock.err = errors.New("redislock: node a: connection refused")
	_ = ld.Acquire(t.Context())
	if d := ld.RetryDelay(); d < 30*time.Second {
		t.Fatalf("RetryDelay after a refused connection %s, want the error back-off", d)
	}
}

// TestSuccessEndsTheErrorBackOff: after an acquired lock, a later wait is
// the plain interval again.
func TestSuccessEndsTheErrorBackOff(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:reset").Lease(), TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lock := &switchLock{Lock: locker, err: errors.New("down")}
	ld, err := New(Config{Lock: lock, WorkerID: "w", RetryInterval: time.Second,
		Work: func(context.Context, Lease) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = ld.Acquire(t.Context())
	}
	lock.err = nil
	if err := ld.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ld.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := ld.RetryDelay(); d < 900*time.Millisecond || d > 1100*time.Millisecond {
		t.Fatalf("RetryDelay after a success %s, want the plain interval", d)
	}
}

// switchLock fails Acquire with err while it is set.
type switchLock struct {
	Lock
	err error
}

func (s *switchLock) Acquire(ctx context.Context, id string, floor int64) (*redislock.Lease, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.Lock.Acquire(ctx, id, floor)
}

type failingLock struct{ err error }

func (f *failingLock) Acquire(context.Context, string, int64) (*redislock.Lease, error) {
	return nil, f.err
}
func (f *failingLock) Renew(context.Context, *redislock.Lease) error   { return f.err }
func (f *failingLock) Release(context.Context, *redislock.Lease) error { return nil }
func (f *failingLock) Reissue(context.Context, *redislock.Lease, int64) (*redislock.Lease, error) {
	return nil, f.err
}

// TestTokensNeverGoBackwards: after the epoch authority lost its data
// (tokens would start again at 1), a replica that held a higher token
// raises the epoch past it before using a token, and says so.
func TestTokensNeverGoBackwards(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := s.Client()
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:backwards").Lease(), TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	logs := &tail.Buffer{}
	ld, err := New(Config{Lock: locker, WorkerID: "w", RetryInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Work:   func(context.Context, Lease) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := ad.Set(ctx, keyspace.MustNew("lw:backwards").Lease().Epoch(), 23, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ld.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if tok := ld.currentLease().Token(); tok != 24 {
		t.Fatalf("token %d, want 24", tok)
	}
	if err := ld.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ad.FlushAll(ctx).Err(); err != nil { // Redis restarted without its data
		t.Fatal(err)
	}
	if err := ld.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if tok := ld.currentLease().Token(); tok != 25 {
		t.Fatalf("token after the data loss %d, want 25 (above the 24 held before)", tok)
	}
	if e := ad.Get(ctx, keyspace.MustNew("lw:backwards").Lease().Epoch()).Val(); e != "25" {
		t.Fatalf("epoch %q, want 25", e)
	}
	// The acquire's floor raised the epoch past 24 before minting.
	if !strings.Contains(logs.String(), "level=ERROR msg=\"Redis lost its data") ||
		!strings.Contains(logs.String(), "epochFound=0 highestObserved=24 token=25") {
		t.Fatalf("no warning:\n%s", logs.String())
	}
	if err := ld.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
