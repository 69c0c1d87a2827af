package leader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockworker/lockworker/internal/redislock"
)

// ErrLeaseExpired is the cause of a work context cancelled because the
// lease's local deadline passed before a renew extended it.
var ErrLeaseExpired = errors.New("leader: lease deadline passed")

// errWorkStopped is the cause of a work context cancelled by StopWork.
var errWorkStopped = errors.New("leader: work stopped")

// Lease is what the work is told about its leadership.
type Lease interface {
	Token() int64
	Deadline() time.Time
	Valid() bool
}

// Lock is what leadership needs of the lock.
type Lock interface {
	Acquire(ctx context.Context, workerID string) (*redislock.Lease, error)
	Renew(ctx context.Context, lease *redislock.Lease) error
	Release(ctx context.Context, lease *redislock.Lease) error
}

var _ Lock = (*redislock.Locker)(nil)

// Work is what the leader does. It runs until ctx is done and must stop
// soon after; anything it writes must be fenced with lease.Token().
type Work func(ctx context.Context, lease Lease) error

// Config configures a Leader.
type Config struct {
	// Lock is required.
	Lock Lock
	// WorkerID is required; it names this replica to people.
	WorkerID string
	// Work is required.
	Work Work
	// RetryInterval is the follower's polling period; required, > 0.
	RetryInterval time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Observe, optional, is told the latency and result of every acquire
	// ("acquired", "held", "error") and renew ("renewed", "lost", "error")
	// attempt, for metrics.
	Observe func(op string, d time.Duration, result string)
}

// Leader implements the machine's callbacks. Acquire, Renew, Release,
// StartWork and StopWork are called by the machine; Status, RetryDelay and
// RedisOK from anywhere.
type Leader struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	lease   *redislock.Lease // nil unless acquired and not yet released
	heldTTL time.Duration    // remaining TTL of another holder, from the last attempt
	work    *running

	redisOK atomic.Bool // the last Redis call got an answer
}

type running struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer // cancels ctx at the lease deadline
	done   chan struct{}
}

// New validates cfg and returns a Leader.
func New(cfg Config) (*Leader, error) {
	var errs []error
	if cfg.Lock == nil {
		errs = append(errs, errors.New("leader: Lock is required"))
	}
	if cfg.WorkerID == "" {
		errs = append(errs, errors.New("leader: WorkerID is required"))
	}
	if cfg.Work == nil {
		errs = append(errs, errors.New("leader: Work is required"))
	}
	if cfg.RetryInterval <= 0 {
		errs = append(errs, errors.New("leader: RetryInterval must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Observe == nil {
		cfg.Observe = func(string, time.Duration, string) {}
	}
	return &Leader{cfg: cfg, log: cfg.Logger}, nil
}

// Acquire tries once to take the lock. A lease left over from a lost
// leadership is released first (compare-and-delete, so it only removes our
// own value) so that we do not wait out our own stale key.
func (l *Leader) Acquire(ctx context.Context) error {
	if stale := l.takeLease(); stale != nil {
		if err := l.cfg.Lock.Release(ctx, stale); err != nil {
			l.log.Debug("could not release the previous lease", "err", err)
		}
	}
	start := time.Now()
	lease, err := l.cfg.Lock.Acquire(ctx, l.cfg.WorkerID)
	var held *redislock.HeldError
	switch {
	case err == nil:
		l.cfg.Observe("acquire", time.Since(start), "acquired")
		l.redisOK.Store(true)
		l.mu.Lock()
		l.lease, l.heldTTL = lease, 0
		l.mu.Unlock()
		l.log.Info("lease granted", "token", lease.Token(), "lease_ms", time.Until(lease.Deadline()).Milliseconds(),
			"acquire_ms", time.Since(start).Milliseconds())
		return nil
	case errors.As(err, &held):
		l.cfg.Observe("acquire", time.Since(start), "held")
		l.redisOK.Store(true)
		l.mu.Lock()
		l.heldTTL = held.TTL
		l.mu.Unlock()
		l.log.Info("Lock is held by another worker", "held_for", held.TTL.Round(time.Millisecond).String())
	default:
		l.cfg.Observe("acquire", time.Since(start), "error")
		l.redisOK.Store(false)
		l.mu.Lock()
		l.heldTTL = 0
		l.mu.Unlock()
		l.log.Warn("acquire failed", "err", err)
	}
	return err
}

// Renew extends the lease. A failure with time left on the lease is retried
// with jittered backoff; it gives up when the lock says the lease is lost or
// the deadline is too close for another try.
func (l *Leader) Renew(ctx context.Context) error {
	lease := l.currentLease()
	if lease == nil {
		return redislock.ErrLost
	}
	backoff := 50 * time.Millisecond
	for {
		start := time.Now()
		err := l.cfg.Lock.Renew(ctx, lease)
		if err == nil {
			l.cfg.Observe("renew", time.Since(start), "renewed")
			l.redisOK.Store(true)
			return l.extendWork(lease)
		}
		if errors.Is(err, redislock.ErrLost) {
			l.cfg.Observe("renew", time.Since(start), "lost")
			l.redisOK.Store(true)
			l.log.Warn("lease lost", "err", err)
			return err
		}
		l.cfg.Observe("renew", time.Since(start), "error")
		l.redisOK.Store(false)
		wait := jitter(backoff, 0.5)
		if time.Until(lease.Deadline()) <= wait {
			l.log.Warn("renew failed and the lease ends before another try", "err", err)
			return err
		}
		l.log.Warn("renew failed, retrying", "err", err, "retry_in", wait.Round(time.Millisecond).String(),
			"lease_left_ms", time.Until(lease.Deadline()).Milliseconds())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// extendWork moves the work's deadline to the renewed lease's deadline. If
// the old deadline already fired, the work is gone and the renew does not
// count: leadership is given up and the next acquire brings a new token.
func (l *Leader) extendWork(lease *redislock.Lease) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.work
	if w == nil {
		return nil
	}
	if context.Cause(w.ctx) != nil {
		return fmt.Errorf("work already stopped: %w", context.Cause(w.ctx))
	}
	w.timer.Reset(time.Until(lease.Deadline()))
	return nil
}

// Release gives the lock up. The machine calls it only after StopWork.
func (l *Leader) Release(ctx context.Context) error {
	lease := l.takeLease()
	if lease == nil {
		return nil
	}
	err := l.cfg.Lock.Release(ctx, lease)
	if err != nil {
		l.log.Warn("release failed; the lease will expire on its own", "err", err,
			"expires_in_ms", max(0, time.Until(lease.Deadline()).Milliseconds()))
	}
	return err
}

// StartWork runs the work in the background under a context that is
// cancelled at the lease deadline or by StopWork.
func (l *Leader) StartWork() {
	lease := l.currentLease()
	if lease == nil {
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &running{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	w.timer = time.AfterFunc(time.Until(lease.Deadline()), func() {
		cancel(ErrLeaseExpired)
		l.log.Warn("lease deadline passed: work stopped", "token", lease.Token())
	})
	l.mu.Lock()
	l.work = w
	l.mu.Unlock()
	go func() {
		defer close(w.done)
		if err := l.cfg.Work(ctx, lease); err != nil && ctx.Err() == nil {
			l.log.Error("work ended with an error", "err", err, "token", lease.Token())
		}
	}()
}

// StopWork cancels the work and waits for it to return, or for ctx.
func (l *Leader) StopWork(ctx context.Context) error {
	l.mu.Lock()
	w := l.work
	l.work = nil
	l.mu.Unlock()
	if w == nil {
		return nil
	}
	w.timer.Stop()
	w.cancel(errWorkStopped)
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("work did not stop in time: %w", ctx.Err())
	}
}

// RetryDelay is how long a follower waits before the next attempt: the
// retry interval with jitter, but never past the moment the current
// holder's lease ends (plus a little jitter so followers do not collide).
func (l *Leader) RetryDelay() time.Duration {
	l.mu.Lock()
	held := l.heldTTL
	l.mu.Unlock()
	d := jitter(l.cfg.RetryInterval, 0.1)
	if held > 0 && held < d {
		d = held + time.Duration(rand.Int64N(int64(25*time.Millisecond)))
	}
	return d
}

// Status is a snapshot for /status and metrics.
type Status struct {
	Leader    bool
	Token     int64
	LeaseLeft time.Duration
}

// Status reports whether this replica leads right now: it holds a lease
// whose deadline has not passed and its work is running.
func (l *Leader) Status() Status {
	l.mu.Lock()
	lease, w := l.lease, l.work
	l.mu.Unlock()
	if lease == nil || w == nil || !lease.Valid() || w.ctx.Err() != nil {
		return Status{}
	}
	return Status{Leader: true, Token: lease.Token(), LeaseLeft: time.Until(lease.Deadline())}
}

// RedisOK reports whether the last lock command got an answer from Redis.
func (l *Leader) RedisOK() bool { return l.redisOK.Load() }

func (l *Leader) currentLease() *redislock.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease
}

func (l *Leader) takeLease() *redislock.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	lease := l.lease
	l.lease = nil
	return lease
}

// jitter spreads d by ±frac so replicas do not retry in lockstep.
func jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}
