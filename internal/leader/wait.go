package leader

import (
	"math/rand/v2"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
)

// failBackoff spaces the attempts after leaderships whose work ended by
// itself, quickly, one after another, and after consecutive acquire
// errors, in units of RetryInterval/4.
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

// BeginWait starts the wait in waiting_to_acquire_lock and says how long
// it lasts (machine.Lane). After a step-down it is the hold, deaf to
// release notices. After a leadership whose work ended by itself, it
// backs off (jittered, from a quarter of the retry interval, doubling
// with each consecutive quick failure up to 4 intervals), deaf to release
// notices meanwhile, so a replica that cannot work does not flap, nor
// wake on its own release. After acquire errors it backs off the same way
// from one interval, until an attempt succeeds, so a Redis that refuses
// every attempt is not hammered; after attempts whose token did not
// reach a replica in a row, from 100 ms instead (replicaBackoff).
// Otherwise it is the retry interval with jitter. Either way it never
// waits past the moment the current holder's lease ends, when the last
// attempt found one (plus a little jitter so followers do not collide).
func (l *Lane) BeginWait() time.Duration {
	d := l.wait()
	l.waitUntil = time.Now().Add(d)
	if l.why.Kind == WorkEnded {
		l.why.Until = l.waitUntil
	}
	return d
}

func (l *Lane) wait() time.Duration {
	now := time.Now()
	unit := l.cfg.RetryInterval / 4
	switch {
	case l.steppedDown:
		l.steppedDown, l.endedByItself = false, false
		l.quietUntil = now.Add(l.cfg.StepDownHold)
		l.deafUntil = l.quietUntil
		l.why.Until = l.quietUntil
		return l.cfg.StepDownHold
	case l.endedByItself:
		l.endedByItself = false
		d := scaled(failBackoff, unit).Delay(l.quickEnds)
		l.deafUntil = now.Add(d)
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
