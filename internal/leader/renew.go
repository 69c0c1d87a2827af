package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// renewBackoff spaces the retries of a renew that failed with time left.
var renewBackoff = backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}

// RenewIn is how long working lasts before renew_lock (machine.Lane):
// until the replica's next renewal tick, so the lanes' renewals arrive
// together at the Renewer, which sends them in one call. A tick is never
// more than RENEW_INTERVAL away.
func (l *Lane) RenewIn() time.Duration { return l.cfg.Renewer.Next() }

// Renew is renew_lock's Call (machine.Lane): it extends the lease through
// the Renewer. A failure with time left on the lease is retried with
// jittered backoff; it gives up when the lock says the lease is lost or
// the deadline is too close for another try, and the machine's
// transition logs why.
func (l *Lane) Renew() machine.Call {
	r := &renewal{l: l, lease: l.lease}
	return func(ctx context.Context) machine.Result {
		r.run(ctx)
		return r
	}
}

// renewal is one renew, with its retries.
type renewal struct {
	l     *Lane
	lease *redislock.Lease

	err      error // nil: renewed
	failed   error // the last attempt that failed, for the fleet registry
	answered bool  // the last attempt got an answer from Redis
}

func (r *renewal) run(ctx context.Context) {
	l := r.l
	if r.lease == nil {
		r.err = redislock.ErrLost
		return
	}
	for fails := 1; ; fails++ {
		start := time.Now()
		err := l.cfg.Renewer.Renew(ctx, l.cfg.Partition, r.lease)
		switch {
		case err == nil:
			l.cfg.Observer.ObserveRenew(time.Since(start), Renewed)
			r.answered = true
			return
		case errors.Is(err, redislock.ErrLost):
			l.cfg.Observer.ObserveRenew(time.Since(start), Lost)
			r.err, r.failed, r.answered = err, err, true
			return
		}
		l.cfg.Observer.ObserveRenew(time.Since(start), RenewError)
		r.failed, r.answered = err, false
		wait := renewBackoff.Delay(fails)
		left := time.Until(r.lease.Deadline())
		if left <= wait {
			r.err = fmt.Errorf("renew failed and the lease ends in %s, before another try: %w", left.Round(time.Millisecond), err)
			return
		}
		l.log.Warn("renew failed, retrying", "err", err, "retryInMs", wait.Milliseconds(), "leaseLeftMs", left.Milliseconds())
		if !backoff.Sleep(ctx, wait) {
			r.err = ctx.Err()
			return
		}
	}
}

// Apply moves the work's deadline to the renewed lease's (machine.Result).
// If the old deadline already fired, the work is gone and the renew does
// not count: the leadership is given up and the next acquire brings a
// new token.
func (r *renewal) Apply() error {
	l := r.l
	l.redisOK = r.answered
	if r.failed != nil {
		l.noteErr(fmt.Errorf("renew: %w", r.failed))
	}
	err := r.err
	if err == nil {
		err = l.extendWork(r.lease)
	}
	if err != nil {
		l.why = Reason{Kind: LeaseLost, Err: err.Error()}
	}
	return err
}

// Discard: a renewal needs no undoing (machine.Result).
func (*renewal) Discard(context.Context) {}
