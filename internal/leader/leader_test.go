package leader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingLock remembers when the last successful acquire or renew started:
// the key on Redis lives at least until that moment + TTL.
type recordingLock struct {
	Lock
	mu        sync.Mutex
	lastStart time.Time
	tokens    []int64
}

func (r *recordingLock) Acquire(ctx context.Context, id string, floor int64) (*redislock.Lease, error) {
	start := time.Now()
	lease, err := r.Lock.Acquire(ctx, id, floor)
	if err == nil {
		r.mu.Lock()
		r.lastStart = start
		r.tokens = append(r.tokens, lease.Token())
		r.mu.Unlock()
	}
	return lease, err
}

func (r *recordingLock) Renew(ctx context.Context, lease *redislock.Lease) error {
	start := time.Now()
	err := r.Lock.Renew(ctx, lease)
	if err == nil {
		r.mu.Lock()
		r.lastStart = start
		r.mu.Unlock()
	}
	return err
}

func (r *recordingLock) keyLivesUntil(ttl time.Duration) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastStart.Add(ttl)
}

// workRecord is what the work saw of its context.
type workRecord struct {
	started   chan int64 // the token, once per leadership
	mu        sync.Mutex
	ended     time.Time
	cause     error
	endedOnce chan struct{}
}

// rig is the real machine, leader and lock over real redis-servers, with
// what the work and the machine did recorded.
type rig struct {
	lock *recordingLock
	ld   *Leader
	rec  *workRecord

	smu    sync.Mutex
	states []machine.State
}

func newRig(t *testing.T, ttl time.Duration, servers ...*redistest.Server) *rig {
	t.Helper()
	var nodes []redis.Scripter
	for _, s := range servers {
		c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	locker, err := redislock.New(redislock.Config{
		Nodes: nodes, Keys: keyspace.MustNew("lw:leader-test").Lease(), TTL: ttl,
		NodeTimeout: 100 * time.Millisecond,
		DriftFactor: 0.25, // a 252ms margin, so a timer that fires late on a loaded machine still fires in time
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{lock: &recordingLock{Lock: locker}, rec: &workRecord{started: make(chan int64, 4), endedOnce: make(chan struct{})}}
	var once sync.Once
	r.ld, err = New(Config{
		Lock: r.lock, WorkerID: "w", RetryInterval: 100 * time.Millisecond,
		Work: func(ctx context.Context, lease Lease) error {
			r.rec.started <- lease.Token()
			<-ctx.Done()
			once.Do(func() {
				r.rec.mu.Lock()
				r.rec.ended, r.rec.cause = time.Now(), context.Cause(ctx)
				r.rec.mu.Unlock()
				close(r.rec.endedOnce)
			})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.New(machine.Config{
		Acquire: r.ld.Acquire, Renew: r.ld.Renew, Release: r.ld.Release,
		StartWork: r.ld.StartWork, StopWork: r.ld.StopWork,
		RenewInterval: ttl / 5, RetryDelay: r.ld.RetryDelay,
		OnTransition: func(_, to machine.State, _ machine.Trigger) {
			r.smu.Lock()
			r.states = append(r.states, to)
			r.smu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		for _, s := range servers {
			s.Thaw()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// count is how often the machine entered st.
func (r *rig) count(st machine.State) int {
	r.smu.Lock()
	defer r.smu.Unlock()
	n := 0
	for _, s := range r.states {
		if s == st {
			n++
		}
	}
	return n
}

// checkStoppedInTime waits for the work to end and checks that it ended
// before the key's TTL on Redis could have run out.
func (r *rig) checkStoppedInTime(t *testing.T, ttl time.Duration) {
	t.Helper()
	select {
	case <-r.rec.endedOnce:
	case <-time.After(3 * ttl):
		t.Fatal("work still running 3 TTLs after losing Redis")
	}
	keyEnd := r.lock.keyLivesUntil(ttl)
	r.rec.mu.Lock()
	ended, cause := r.rec.ended, r.rec.cause
	r.rec.mu.Unlock()
	// Either the deadline timer fired (the work ended by itself, and the
	// machine gave the leadership up through cleanup), or renew gave up
	// first because the deadline was too close for another try and the
	// machine paused work.
	if !errors.Is(cause, ErrLeaseExpired) && !errors.Is(cause, errWorkStopped) {
		t.Errorf("work context cause %v, want the lease deadline or a stop", cause)
	}
	if !ended.Before(keyEnd) {
		t.Fatalf("work stopped %s after the key's TTL could have ended", ended.Sub(keyEnd))
	}
	t.Logf("work stopped %s before the key's TTL ended", keyEnd.Sub(ended).Round(time.Millisecond))
	if st := r.ld.Status(); st.Leader {
		t.Fatalf("status still says leader after the deadline: %+v", st)
	}
	waitUntil(t, 5*time.Second, "pause_work or cleanup", func() bool {
		return r.count(machine.PauseWork)+r.count(machine.Cleanup) > 0
	})
}

// TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes drives the real machine
// and lease against a real redis-server, freezes the server (SIGSTOP) while
// leading, and checks that the work's context is cancelled, by the local
// deadline, before the key's TTL on Redis can have run out; then that the
// machine pauses work and leads again, with a higher token, once Redis is
// back.
func TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes(t *testing.T) {
	const ttl = time.Second
	s := redistest.Start(t, redistest.Options{})
	r := newRig(t, ttl, s)
	first := receiveToken(t, r.rec.started, 5*time.Second)
	// Let renewals pass, so the deadline in force is a renewed one.
	waitUntil(t, 5*time.Second, "two renewals", func() bool { return r.count(machine.RenewLock) >= 2 })

	s.Freeze()
	r.checkStoppedInTime(t, ttl)

	s.Thaw()
	second := receiveToken(t, r.rec.started, 10*time.Second)
	if second <= first {
		t.Fatalf("token after the freeze %d, before %d: want it to increase", second, first)
	}
}

// TestRedlockLeaderAcrossNodeLoss: over 5 masters a leader that loses 2
// keeps leading through renewals; losing a third stops its work before the
// key's TTL can end and pauses it; when the nodes come back it leads again
// with a higher token.
func TestRedlockLeaderAcrossNodeLoss(t *testing.T) {
	const ttl = time.Second
	var servers []*redistest.Server
	for range 5 {
		servers = append(servers, redistest.Start(t, redistest.Options{}))
	}
	r := newRig(t, ttl, servers...)
	first := receiveToken(t, r.rec.started, 5*time.Second)

	// Nodes 3 and 4 freeze (node 0 is the epoch authority and stays up).
	servers[3].Freeze()
	servers[4].Freeze()
	renews := r.count(machine.RenewLock)
	waitUntil(t, 5*time.Second, "three renewals with 2 of 5 nodes frozen", func() bool {
		return r.count(machine.RenewLock) >= renews+3
	})
	if n := r.count(machine.PauseWork); n != 0 {
		t.Fatalf("paused work %d time(s) with 3 of 5 nodes up", n)
	}
	if st := r.ld.Status(); !st.Leader || st.Token != first {
		t.Fatalf("status with 3 of 5 nodes up: %+v, want leader with token %d", st, first)
	}

	servers[2].Freeze()
	r.checkStoppedInTime(t, ttl)

	for _, s := range servers[2:] {
		s.Thaw()
	}
	second := receiveToken(t, r.rec.started, 10*time.Second)
	if second <= first {
		t.Fatalf("token after the node loss %d, before %d: want it to increase", second, first)
	}
}

// TestRetryDelayFollowsTheHolder: a follower that found the lock held does
// not sleep past the holder's remaining TTL (plus a little jitter), and
// otherwise waits the jittered retry interval.
func TestRetryDelayFollowsTheHolder(t *testing.T) {
	held := &heldLock{}
	ld, err := New(Config{Lock: held, WorkerID: "w", RetryInterval: 5 * time.Second,
		Work: func(context.Context, Lease) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		ttl      time.Duration
		min, max time.Duration
	}{
		{"short TTL caps the wait", 300 * time.Millisecond, 300 * time.Millisecond, 325 * time.Millisecond},
		{"long TTL keeps the interval", time.Minute, 4500 * time.Millisecond, 5500 * time.Millisecond},
		{"unknown TTL keeps the interval", 0, 4500 * time.Millisecond, 5500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held.ttl = tc.ttl
			if err := ld.Acquire(t.Context()); !errors.Is(err, redislock.ErrNotAcquired) {
				t.Fatalf("Acquire: %v, want ErrNotAcquired", err)
			}
			for range 50 {
				if d := ld.RetryDelay(); d < tc.min || d > tc.max {
					t.Fatalf("RetryDelay %s, want within [%s, %s]", d, tc.min, tc.max)
				}
			}
		})
	}
}

// TestHeld: a lock held elsewhere is told apart from an error, wrapped
// or not, as Acquire tells them apart.
func TestHeldByAnother(t *testing.T) {
	held := &redislock.HeldError{TTL: time.Second}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{held, true},
		{fmt.Errorf("acquire: %w", held), true},
		{redislock.ErrNotAcquired, false}, // a quorum not reached is no proof of a holder
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
		{nil, false},
	} {
		if got := HeldByAnother(c.err); got != c.want {
			t.Errorf("HeldByAnother(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{})
	for _, want := range []string{"Lock is required", "WorkerID is required", "Work is required", "RetryInterval must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(Config{}) = %v; want it to say %q", err, want)
		}
	}
}

// heldLock is a lock always held by someone else for ttl.
type heldLock struct{ ttl time.Duration }

func (h *heldLock) Acquire(context.Context, string, int64) (*redislock.Lease, error) {
	return nil, &redislock.HeldError{TTL: h.ttl}
}
func (h *heldLock) Renew(context.Context, *redislock.Lease) error   { return redislock.ErrLost }
func (h *heldLock) Release(context.Context, *redislock.Lease) error { return nil }
func (h *heldLock) Reissue(context.Context, *redislock.Lease, int64) (*redislock.Lease, error) {
	return nil, redislock.ErrLost
}

func receiveToken(t *testing.T, c <-chan int64, within time.Duration) int64 {
	t.Helper()
	select {
	case tok := <-c:
		return tok
	case <-time.After(within):
		t.Fatalf("work did not start within %s", within)
		return 0
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWorkContextFollowsTheLease: the work's context is the one owner of
// the lease deadline. It lives past several lease periods while renewals
// move the deadline, and ends, with ErrLeaseExpired, once renewals stop and
// the deadline passes, never before it.
func TestWorkContextFollowsTheLease(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:work-ctx").Lease(), TTL: 600 * time.Millisecond,
		NodeTimeout: 300 * time.Millisecond}) // a renew slowed by a busy host still lands within the lease
	if err != nil {
		t.Fatal(err)
	}
	ctxs := make(chan context.Context, 1)
	ld, err := New(Config{Lock: locker, WorkerID: "w", RetryInterval: time.Second,
		Work: func(ctx context.Context, _ Lease) error { ctxs <- ctx; <-ctx.Done(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	ld.StartWork(func(error) {})
	t.Cleanup(func() { _ = ld.StopWork(context.Background()) })
	work := <-ctxs
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); { // several lease periods
		if err := ld.Renew(t.Context()); err != nil {
			t.Fatalf("renew: %v", err)
		}
		if work.Err() != nil {
			t.Fatalf("work context ended (%v) although the lease was renewed", context.Cause(work))
		}
		time.Sleep(30 * time.Millisecond) // the renew cadence under test, not a synchronisation
	}
	deadline := ld.currentLease().Deadline()
	select {
	case <-work.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("work context outlived the lease")
	}
	if !errors.Is(context.Cause(work), ErrLeaseExpired) || time.Now().Before(deadline) {
		t.Fatalf("work ended with %v at %v, deadline %v", context.Cause(work), time.Now(), deadline)
	}
}
