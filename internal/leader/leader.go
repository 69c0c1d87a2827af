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

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/redislock"
)

// Lease is what the work is told about its leadership.
type Lease interface {
	Token() int64
	Deadline() time.Time
	Valid() bool
}

// Lock is what leadership needs of the lock.
type Lock interface {
	Acquire(ctx context.Context, workerID string, floor int64) (*redislock.Lease, error)
	Renew(ctx context.Context, lease *redislock.Lease) error
	Release(ctx context.Context, lease *redislock.Lease) error
	Reissue(ctx context.Context, lease *redislock.Lease, floor int64) (*redislock.Lease, error)
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
	// RetryInterval is the follower's polling period; required, > 0. The
	// waits after failures back off from it (see RetryDelay).
	RetryInterval time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Observer, optional, is told the latency and result of every acquire
	// and renew attempt, for metrics.
	Observer Observer
	// StepDownHold is how long a replica that stepped down (StepDown)
	// waits before it competes again, deaf to release notices meanwhile,
	// so another replica takes over. Default 2 x RetryInterval.
	StepDownHold time.Duration
	// BeforeRelease, optional, is called by Release with the token of a
	// lease that is still valid, just before the lock is given up, and
	// with why the leadership's work ended: nil when it was stopped (a
	// shutdown), ErrSteppedDown, or the error it ended with. It runs on
	// the machine's release callback and must honour ctx.
	BeforeRelease func(ctx context.Context, token int64, cause error)
}

// Observer is told how long each lock call took and how it went. Calls
// come from the machine's callback goroutines and must not block.
type Observer interface {
	ObserveAcquire(d time.Duration, result AcquireResult)
	ObserveRenew(d time.Duration, result RenewResult)
	// EpochRegression: an acquire found the epoch below a token this
	// replica had observed (Redis lost its data).
	EpochRegression()
}

type nopObserver struct{}

func (nopObserver) ObserveAcquire(time.Duration, AcquireResult) {}
func (nopObserver) ObserveRenew(time.Duration, RenewResult)     {}
func (nopObserver) EpochRegression()                            {}

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
	highest int64 // the highest token this replica has held
	// observed is the highest token this replica has seen anywhere: its
	// own, the lock values of other holders, what Observe was told (the
	// registry, the history). Every acquire passes it as the floor.
	observed int64
	// regressed is the observed token of the last epoch regression
	// logged, so one loss of data is logged once.
	regressed int64

	// What RetryDelay backs off on: consecutive acquire attempts that
	// ended in an error, and leaderships whose work ended by itself
	// quickly (endedByItself: the last one did, and no wait has been
	// armed since). deafUntil ends the wait that follows such a
	// leadership; release notices before it are not heard.
	acquireErrs   int
	replicasLast  bool // the last of them was ErrReplicas
	quickEnds     int
	endedByItself bool
	deafUntil     time.Time
	// steppedDown: the last leadership stepped down; the next wait is the
	// hold (StepDownHold). endCause is why the current lease's work ended
	// by itself (nil when stopped), for BeforeRelease.
	steppedDown bool
	endCause    error

	lastErr   string    // the latest error met, for the fleet registry
	lastErrAt time.Time // when

	redisOK atomic.Bool // the last Redis call got an answer
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
	if cfg.StepDownHold < 0 {
		errs = append(errs, errors.New("leader: StepDownHold must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.StepDownHold == 0 {
		cfg.StepDownHold = 2 * cfg.RetryInterval
	}
	return &Leader{cfg: cfg, log: cfg.Logger}, nil
}

// HeldByAnother reports whether an error of Acquire only says that another holder
// has the lock: a follower's routine, not a fault.
func HeldByAnother(err error) bool {
	var held *redislock.HeldError
	return errors.As(err, &held)
}

// Acquire tries once to take the lock, with the highest token this
// replica has observed as the floor: the token it gets is above it even
// when Redis lost the epoch meanwhile. A lease left over from a lost
// leadership is released first (compare-and-delete, so it only removes our
// own value) so that we do not wait out our own stale key. Its error is
// logged by the machine's transition, not here.
func (l *Leader) Acquire(ctx context.Context) error {
	if stale := l.takeLease(); stale != nil {
		if err := l.cfg.Lock.Release(ctx, stale); err != nil {
			l.log.Debug("could not release the previous lease", "err", err)
		}
	}
	l.mu.Lock()
	floor := l.observed
	l.mu.Unlock()
	start := time.Now()
	lease, err := l.cfg.Lock.Acquire(ctx, l.cfg.WorkerID, floor)
	var held *redislock.HeldError
	heldTTL, result := time.Duration(0), AcquireError
	switch {
	case err == nil:
		l.checkEpoch(lease, floor)
		if lease, err = l.aboveHighest(ctx, lease); err == nil {
			result = Acquired
		}
	case errors.As(err, &held):
		heldTTL, result = held.TTL, Held
		l.Observe(held.Token)
	}
	l.cfg.Observer.ObserveAcquire(time.Since(start), result)
	l.redisOK.Store(result != AcquireError)
	l.mu.Lock()
	l.heldTTL = heldTTL
	switch result {
	case AcquireError:
		l.acquireErrs++
		l.replicasLast = errors.Is(err, redislock.ErrReplicas)
		l.noteErr(fmt.Errorf("acquire: %w", err))
	case Acquired:
		l.acquireErrs, l.replicasLast = 0, false
	case Held: // keeps the count: a failing attempt of another replica also answers held
	}
	if err == nil {
		l.lease, l.highest = lease, max(l.highest, lease.Token())
		l.observed = max(l.observed, lease.Token())
	}
	l.mu.Unlock()
	if err == nil {
		l.log.Info("lease granted", "token", lease.Token(), "leaseMs", time.Until(lease.Deadline()).Milliseconds(),
			"acquireMs", time.Since(start).Milliseconds())
	}
	return err
}

// Observe tells the leader of a token handed out for its lock, seen
// outside its own acquires (a registry record, the history): the next
// acquire's floor is at least that.
func (l *Leader) Observe(token int64) {
	l.mu.Lock()
	l.observed = max(l.observed, token)
	l.mu.Unlock()
}

// Observed is the highest token this replica has seen for its lock.
func (l *Leader) Observed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.observed
}

// checkEpoch says so, once per loss, when the epoch the new lease was
// minted from was below a token observed before: Redis lost its data.
// The lease's token is above the floor anyway (the acquire raised the
// epoch first).
func (l *Leader) checkEpoch(lease *redislock.Lease, floor int64) {
	seen := lease.EpochSeen()
	if seen < 0 || seen >= floor {
		return
	}
	l.cfg.Observer.EpochRegression()
	l.mu.Lock()
	first := l.regressed != floor
	l.regressed = floor
	l.mu.Unlock()
	if first {
		l.log.Error("Redis lost its data: the fencing epoch was below a token already handed out; "+
			"raised past it, so no token is handed out twice, but jobs acknowledged before may be lost "+
			"(check Redis's persistence, maxmemory-policy and log)",
			"epochFound", seen, "highestObserved", floor, "token", lease.Token())
	}
}

// renewBackoff spaces the retries of a renew that failed with time left.
var renewBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}

// Renew extends the lease. A failure with time left on the lease is retried
// with jittered backoff; it gives up when the lock says the lease is lost or
// the deadline is too close for another try, and the machine's transition
// logs why.
func (l *Leader) Renew(ctx context.Context) error {
	lease := l.currentLease()
	if lease == nil {
		return redislock.ErrLost
	}
	for fails := 1; ; fails++ {
		start := time.Now()
		err := l.cfg.Lock.Renew(ctx, lease)
		switch {
		case err == nil:
			l.cfg.Observer.ObserveRenew(time.Since(start), Renewed)
			l.redisOK.Store(true)
			return l.extendWork(lease)
		case errors.Is(err, redislock.ErrLost):
			l.cfg.Observer.ObserveRenew(time.Since(start), Lost)
			l.redisOK.Store(true)
			l.noteErrLocked(fmt.Errorf("renew: %w", err))
			return err
		}
		l.cfg.Observer.ObserveRenew(time.Since(start), RenewError)
		l.redisOK.Store(false)
		l.noteErrLocked(fmt.Errorf("renew: %w", err))
		wait := renewBackoff.Delay(fails)
		left := time.Until(lease.Deadline())
		if left <= wait {
			return fmt.Errorf("renew failed and the lease ends in %s, before another try: %w", left.Round(time.Millisecond), err)
		}
		l.log.Warn("renew failed, retrying", "err", err, "retryInMs", wait.Milliseconds(), "leaseLeftMs", left.Milliseconds())
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// Release gives the lock up. The machine calls it only after StopWork. A
// lease still valid is a leadership given up on purpose: BeforeRelease is
// told first, with why its work ended.
func (l *Leader) Release(ctx context.Context) error {
	lease := l.takeLease()
	l.mu.Lock()
	cause := l.endCause
	l.endCause = nil
	l.mu.Unlock()
	if lease == nil {
		return nil
	}
	if l.cfg.BeforeRelease != nil && lease.Valid() {
		l.cfg.BeforeRelease(ctx, lease.Token(), cause)
	}
	err := l.cfg.Lock.Release(ctx, lease)
	if err != nil {
		l.log.Warn("release failed; the lease will expire on its own", "err", err,
			"expires_in_ms", max(0, time.Until(lease.Deadline()).Milliseconds()))
	}
	return err
}

// failBackoff spaces the attempts after leaderships whose work ended by
// itself, quickly, one after another, and after consecutive acquire
// errors, in units of RetryInterval.
var (
	failBackoff  = backoff.Policy{Base: 1, Max: 16} // RetryInterval/4 doubling to 4x
	errorBackoff = backoff.Policy{Base: 4, Max: 16} // RetryInterval doubling to 4x
)

// replicaBackoff spaces the attempts after ones whose token did not reach
// a replica in time (ErrReplicas): Redis answered and the lock is free, a
// replica that just (re)joined is typically acknowledging within a
// second, and meanwhile the fleet has no leader; so they retry soon, at
// most every RetryInterval.
var replicaBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}

// RetryDelay is how long to wait before the next attempt. After a
// leadership whose work ended by itself, it backs off (jittered, from a
// quarter of the retry interval, doubling with each consecutive quick
// failure up to 4 intervals) and release notices are not heard meanwhile
// (WantsNotice), so a replica that cannot work does not flap, nor wake on
// its own release. After acquire errors it backs off the same way from
// one interval, until an attempt succeeds, so a Redis that refuses every
// attempt is not hammered; after attempts whose token did not reach a
// replica in a row, from 100 ms instead (replicaBackoff). Otherwise it is the retry interval with jitter.
// Either way it never waits past the moment the current holder's lease
// ends, when the last attempt found one (plus a little jitter so
// followers do not collide).
func (l *Leader) RetryDelay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	unit := l.cfg.RetryInterval / 4
	if l.steppedDown {
		l.steppedDown = false
		l.deafUntil = time.Now().Add(l.cfg.StepDownHold)
		return l.cfg.StepDownHold
	}
	if l.endedByItself {
		l.endedByItself = false
		d := scaled(failBackoff, unit).Delay(l.quickEnds)
		l.deafUntil = time.Now().Add(d)
		return d
	}
	d := backoff.Jitter(l.cfg.RetryInterval, 0.1)
	switch {
	case l.replicasLast:
		d = min(replicaBackoff.Delay(l.acquireErrs), d)
	case l.acquireErrs > 0:
		d = scaled(errorBackoff, unit).Delay(l.acquireErrs)
	}
	if l.heldTTL > 0 && l.heldTTL < d {
		d = l.heldTTL + time.Duration(rand.Int64N(int64(25*time.Millisecond)))
	}
	return d
}

func scaled(p backoff.Policy, unit time.Duration) backoff.Policy {
	return backoff.Policy{Base: p.Base * unit, Max: p.Max * unit}
}

// WantsNotice reports whether a release notice should wake this replica:
// not during the wait that follows a leadership whose work ended by
// itself (its own release's notice among them).
func (l *Leader) WantsNotice() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !time.Now().Before(l.deafUntil)
}

// aboveHighest makes sure a new lease's token is above every token this
// replica has held: one that is not means the epoch authority lost its
// data and counts again (24 -> 1). The epoch is then raised past the
// highest known token and the lease gets a new token from it, before any
// work uses one; a warning says so. On failure the lease is released.
func (l *Leader) aboveHighest(ctx context.Context, lease *redislock.Lease) (*redislock.Lease, error) {
	l.mu.Lock()
	highest := l.highest
	l.mu.Unlock()
	if lease.Token() > highest {
		return lease, nil
	}
	l.log.Warn("fencing token went backwards: the epoch authority lost its data; raising the epoch past the highest token seen",
		"token", lease.Token(), "highestSeen", highest)
	next, err := l.cfg.Lock.Reissue(ctx, lease, highest)
	if err != nil {
		_ = l.cfg.Lock.Release(context.WithoutCancel(ctx), lease)
		return nil, fmt.Errorf("could not raise the epoch past token %d: %w", highest, err)
	}
	return next, nil
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

// LastError is the latest error this replica met (an acquire or renew that
// failed, work that ended with an error) and when; "" before any.
func (l *Leader) LastError() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr, l.lastErrAt
}

// noteErr remembers err for LastError; l.mu must be held.
func (l *Leader) noteErr(err error) {
	l.lastErr, l.lastErrAt = err.Error(), time.Now()
}

func (l *Leader) noteErrLocked(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.noteErr(err)
}

// RedisOK reports whether the last lock command got an answer from Redis.
func (l *Leader) RedisOK() bool { return l.redisOK.Load() }

// HeldLease is the lease this replica holds, from a successful acquire
// until its release; nil when none. A partitioned replica's heartbeat
// renews it with the others (redislock.Group).
func (l *Leader) HeldLease() *redislock.Lease { return l.currentLease() }

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
