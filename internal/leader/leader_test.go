package leader

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/redistest"
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

func (r *recordingLock) Acquire(ctx context.Context, id string) (*redislock.Lease, error) {
	start := time.Now()
	lease, err := r.Lock.Acquire(ctx, id)
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

// TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes drives the real machine
// and lease against a real redis-server, freezes the server (SIGSTOP) while
// leading, and checks that the work's context is cancelled, by the local
// deadline, before the key's TTL on Redis can have run out; then that the
// machine pauses work and leads again, with a higher token, once Redis is
// back.
func TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes(t *testing.T) {
	const ttl = time.Second
	s := redistest.Start(t, redistest.Options{})
	client := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	locker, err := redislock.New(redislock.Config{
		Nodes: []redis.Scripter{client}, Key: "lw:leader-test", TTL: ttl,
		NodeTimeout: 100 * time.Millisecond,
		DriftFactor: 0.1, // a 102ms margin, so a timer that fires late on a loaded machine still fires in time
	})
	if err != nil {
		t.Fatal(err)
	}
	lock := &recordingLock{Lock: locker}
	rec := &workRecord{started: make(chan int64, 4), endedOnce: make(chan struct{})}
	var once sync.Once
	ld, err := New(Config{
		Lock: lock, WorkerID: "w", RetryInterval: 100 * time.Millisecond,
		Work: func(ctx context.Context, lease Lease) error {
			rec.started <- lease.Token()
			<-ctx.Done()
			once.Do(func() {
				rec.mu.Lock()
				rec.ended, rec.cause = time.Now(), context.Cause(ctx)
				rec.mu.Unlock()
				close(rec.endedOnce)
			})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		smu    sync.Mutex
		states []machine.State
	)
	m, err := machine.New(machine.Config{
		Acquire: ld.Acquire, Renew: ld.Renew, Release: ld.Release,
		StartWork: ld.StartWork, StopWork: ld.StopWork,
		RenewInterval: 200 * time.Millisecond, RetryDelay: ld.RetryDelay,
		OnTransition: func(_, to machine.State, _ machine.Trigger) {
			smu.Lock()
			states = append(states, to)
			smu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		s.Thaw()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	first := receiveToken(t, rec.started, 5*time.Second)
	// Let a renewal or two pass, so the deadline in force is a renewed one.
	waitUntil(t, 5*time.Second, "two renewals", func() bool {
		smu.Lock()
		defer smu.Unlock()
		n := 0
		for _, st := range states {
			if st == machine.RenewLock {
				n++
			}
		}
		return n >= 2
	})

	s.Freeze()
	select {
	case <-rec.endedOnce:
	case <-time.After(3 * ttl):
		t.Fatal("work still running 3 TTLs after Redis froze")
	}
	keyEnd := lock.keyLivesUntil(ttl)
	rec.mu.Lock()
	ended, cause := rec.ended, rec.cause
	rec.mu.Unlock()
	// Either the deadline timer fired, or renew gave up first because the
	// deadline was too close for another try and the machine paused work.
	if !errors.Is(cause, ErrLeaseExpired) && !errors.Is(cause, errWorkStopped) {
		t.Errorf("work context cause %v, want the lease deadline or a stop", cause)
	}
	if !ended.Before(keyEnd) {
		t.Fatalf("work stopped %s after the key's TTL could have ended", ended.Sub(keyEnd))
	}
	t.Logf("work stopped %s before the key's TTL ended", keyEnd.Sub(ended).Round(time.Millisecond))
	if st := ld.Status(); st.Leader {
		t.Fatalf("status still says leader after the deadline: %+v", st)
	}
	waitUntil(t, 5*time.Second, "pause_work", func() bool {
		smu.Lock()
		defer smu.Unlock()
		for _, st := range states {
			if st == machine.PauseWork {
				return true
			}
		}
		return false
	})

	s.Thaw()
	second := receiveToken(t, rec.started, 10*time.Second)
	if second <= first {
		t.Fatalf("token after the freeze %d, before %d: want it to increase", second, first)
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

func (h *heldLock) Acquire(context.Context, string) (*redislock.Lease, error) {
	return nil, &redislock.HeldError{TTL: h.ttl}
}
func (h *heldLock) Renew(context.Context, *redislock.Lease) error   { return redislock.ErrLost }
func (h *heldLock) Release(context.Context, *redislock.Lease) error { return nil }

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
