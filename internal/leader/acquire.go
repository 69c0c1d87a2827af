package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// Acquire is acquiring_lock's Call (machine.Lane): one attempt, with the
// highest token this lane has observed as the floor, so the token it gets
// is above it even when Redis lost the epoch meanwhile. The guards are
// asked first; one that refuses is the attempt's answer, and Redis is not
// asked. A lease left over from a lost leadership is released first
// (compare-and-delete, so it only removes our own value) so that we do
// not wait out our own stale key. Its error is logged by the machine's
// transition, not here.
func (l *Lane) Acquire() machine.Call {
	stale := l.lease
	l.lease = nil
	a := &attempt{l: l, floor: l.observed, highest: l.highest, holder: l.holder, refused: l.mayLead()}
	return func(ctx context.Context) machine.Result {
		if stale != nil {
			if err := l.cfg.Lock.Release(ctx, stale); err != nil {
				l.log.Debug("could not release the previous lease", "err", err)
			}
		}
		if a.refused == nil {
			a.run(ctx)
		}
		return a
	}
}

// attempt is one acquire: what it was given on the lane's goroutine, and
// what it found, which Apply hands back to the lane.
type attempt struct {
	l       *Lane
	floor   int64
	highest int64
	refused error // a guard's answer: no attempt was made

	lease  *redislock.Lease
	err    error
	took   time.Duration
	held   *redislock.HeldError
	holder holderSeen // the holder, named (read again when its token changed)
}

// run makes the attempt, in the Call's goroutine.
func (a *attempt) run(ctx context.Context) {
	l := a.l
	start := time.Now()
	lease, err := l.cfg.Lock.Acquire(ctx, l.cfg.WorkerID, a.floor)
	switch {
	case err == nil:
		a.lease, a.err = l.aboveHighest(ctx, lease, a.highest)
	case errors.As(err, &a.held):
		a.err = err
		if a.held.Token != a.holder.token || a.holder.worker == "" {
			a.holder = holderSeen{token: a.held.Token}
			if h, herr := l.cfg.Lock.Holder(ctx); herr == nil && h.Held {
				a.holder.worker = h.WorkerID // for people: who leads
			}
		}
	default:
		a.err = err
	}
	a.took = time.Since(start)
}

// Apply records what the attempt found (machine.Result).
func (a *attempt) Apply() error {
	l := a.l
	if a.refused != nil {
		l.cfg.Observer.ObserveAcquire(0, AcquireError)
		l.acquireFailed(a.refused, refusedReason(a.refused))
		return a.refused
	}
	if l.cfg.Acquired != nil {
		l.cfg.Acquired(a.err)
	}
	switch {
	case a.err == nil:
		l.cfg.Observer.ObserveAcquire(a.took, Acquired)
		l.acquired(a.lease, a.floor, a.took)
	case a.held != nil:
		l.cfg.Observer.ObserveAcquire(a.took, Held)
		l.redisOK, l.heldTTL, l.holder = true, a.held.TTL, a.holder
		l.observed = max(l.observed, a.held.Token)
		l.why = Reason{Kind: HeldElsewhere, Holder: a.holder.worker, Token: a.held.Token, Until: time.Now().Add(a.held.TTL)}
		// keeps acquireErrs: a failing attempt of another replica also answers held
	default:
		l.cfg.Observer.ObserveAcquire(a.took, AcquireError)
		l.acquireFailed(a.err, errReason(a.err))
	}
	return a.err
}

// Discard releases a lease won after acquiring_lock was left
// (machine.Result): it must not wait out its TTL.
func (a *attempt) Discard(ctx context.Context) {
	if a.lease == nil {
		return
	}
	a.l.log.Debug("releasing a lease won after its attempt was abandoned", "token", a.lease.Token())
	if err := a.l.cfg.Lock.Release(ctx, a.lease); err != nil {
		a.l.log.Debug("could not release the abandoned lease", "err", err)
	}
}

func (l *Lane) acquired(lease *redislock.Lease, floor int64, took time.Duration) {
	l.redisOK, l.heldTTL, l.why = true, 0, Reason{}
	l.acquireErrs, l.replicasLast = 0, false
	l.checkEpoch(lease, floor)
	l.lease = lease
	l.highest = max(l.highest, lease.Token())
	l.observed = max(l.observed, lease.Token())
	l.log.Info("lease granted", "token", lease.Token(), "leaseMs", time.Until(lease.Deadline()).Milliseconds(),
		"acquireMs", took.Milliseconds())
}

func (l *Lane) acquireFailed(err error, why Reason) {
	l.redisOK, l.heldTTL = false, 0
	l.acquireErrs++
	l.replicasLast = errors.Is(err, redislock.ErrReplicas)
	l.noteErr(fmt.Errorf("acquire: %w", err))
	l.why = why
}

// checkEpoch says so, once per loss, when the epoch the new lease was
// minted from was below a token observed before: Redis lost its data.
// The lease's token is above the floor anyway (the acquire raised the
// epoch first).
func (l *Lane) checkEpoch(lease *redislock.Lease, floor int64) {
	seen := lease.EpochSeen()
	if seen < 0 || seen >= floor {
		return
	}
	l.cfg.Observer.EpochRegression()
	if l.regressed == floor {
		return
	}
	l.regressed = floor
	l.log.Error("Redis lost its data: the fencing epoch was below a token already handed out; "+
		"raised past it, so no token is handed out twice, but jobs acknowledged before may be lost "+
		"(check Redis's persistence, maxmemory-policy and log)",
		"epochFound", seen, "highestObserved", floor, "token", lease.Token())
}

// aboveHighest makes sure a new lease's token is above every token this
// lane has held: one that is not means the epoch authority lost its data
// and counts again (24 -> 1). The epoch is then raised past the highest
// known token and the lease gets a new token from it, before any work
// uses one; a warning says so. On failure the lease is released.
func (l *Lane) aboveHighest(ctx context.Context, lease *redislock.Lease, highest int64) (*redislock.Lease, error) {
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
