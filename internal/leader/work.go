package leader

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// ErrLeaseExpired is the cause of a work context cancelled because the
// lease's local deadline passed before a renew extended it.
var ErrLeaseExpired = errors.New("leader: lease deadline passed")

// errWorkStopped is the cause of a work context cancelled by StopWork.
var errWorkStopped = errors.New("leader: work stopped")

// ErrSteppedDown is the cause of a work context cancelled by StepDown: an
// operator asked the leader to give its leadership up.
var ErrSteppedDown = errors.New("leader: stepped down on request")

// ErrWorkReturned is why a leadership ends when its work returned nil
// while its context was still live: a leader must not hold the lock
// without working.
var ErrWorkReturned = errors.New("leader: work returned while its lease was valid")

// errNoLease ends a work started without a lease (a bug, not a fault).
var errNoLease = errors.New("leader: no lease to work under")

// running is the work of one leadership: its context is the one owner of
// the lease deadline (timer re-armed by each renewal). Its goroutine
// reads only ctx, lease and done; the rest is the lane's.
type running struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer // cancels ctx at the lease deadline
	done    chan struct{}
	lease   *redislock.Lease
	started time.Time
	// healthy is how long the work must run for its leadership to count
	// as healthy: the lease's validity when it was granted.
	healthy time.Duration
	// ended: the work ended by itself and the lane was told.
	ended bool
}

// StartWork runs the work in the background (machine.Lane) under a
// context that is cancelled at the lease deadline, by StopWork, by a
// step-down and by a guard that refuses (a guard that refuses already
// ends it at once). When the work ends any other way (it returns, fails
// or panics, or the deadline passed) its context is cancelled at once, so
// the snapshot stops saying it leads, and the lane is told, which ends
// the leadership (WORK_ENDED).
func (l *Lane) StartWork() {
	l.leads++
	l.paused = false // until this leadership's work reads the flag
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &running{ctx: ctx, cancel: cancel, done: make(chan struct{}), lease: l.lease, started: time.Now()}
	l.work = w
	if w.lease == nil {
		cancel(errNoLease)
	} else {
		w.healthy = time.Until(w.lease.Deadline())
		token := w.lease.Token()
		w.timer = time.AfterFunc(w.healthy, func() {
			cancel(ErrLeaseExpired)
			l.log.Warn("lease deadline passed: work stopped", "token", token)
		})
		if err := l.mayLead(); err != nil {
			cancel(err)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(w.done)
		l.runWork(w)
	}()
}

// runWork runs the work to its end and tells the lane why it ended by
// itself; a work stopped by StopWork ends without a word.
func (l *Lane) runWork(w *running) {
	var err error
	if w.lease != nil && w.ctx.Err() == nil {
		err = l.guarded(w.ctx, w.lease)
	}
	switch cause := context.Cause(w.ctx); {
	case errors.Is(cause, errWorkStopped):
		return
	case cause != nil && !errors.Is(cause, ErrLeaseExpired):
		err = cause // the lane ended it: a step-down, a guard, no lease
	case err != nil:
	case cause != nil:
		err = cause
	default:
		err = ErrWorkReturned
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(err)
	l.m.Post(workEnded{w: w, err: err}) // the machine's transition logs err
}

// guarded runs the work, turning a panic into an error after logging it
// with its stack, once: a bug in the work ends the leadership, never the
// process.
func (l *Lane) guarded(ctx context.Context, lease *redislock.Lease) (err error) {
	defer func() {
		if v := recover(); v != nil {
			l.log.Error("work panicked", "panic", fmt.Sprint(v), "token", lease.Token(), "stack", string(debug.Stack()))
			err = fmt.Errorf("leader: work panicked: %v", v)
		}
	}()
	return l.cfg.Work(ctx, lease)
}

// working reports that the current leadership's work runs.
func (l *Lane) working() bool {
	return l.work != nil && !l.work.ended && l.work.ctx.Err() == nil
}

// workEnded takes the end of a work that ended by itself: the current
// leadership's ends it (WORK_ENDED); an earlier one's, or one stopped
// meanwhile, changes nothing.
//
// Work that ended by itself before the lease's validity had passed is a
// quick failure: the next wait backs off, longer after each consecutive
// one. A leadership that lasted at least that long is healthy and resets
// the count. It also makes the lane deaf to release notices from now
// until its wait is armed (BeginWait then deafens it for the wait), so
// the notice of its own release, which may come before or after the
// chart enters waiting_to_acquire_lock, never cuts the wait short. A
// step-down is no failure: its wait is the hold.
func (l *Lane) workEnded(w *running, err error) (machine.Move, bool) {
	if w != l.work || w.ended {
		l.log.Debug("stale event dropped", "trigger", machine.WorkEnded.String(), "err", err)
		return machine.Move{}, false
	}
	w.ended = true
	healthy := time.Since(w.started) >= w.healthy
	l.endCause = err
	l.deafUntil = time.Now().Add(deafUntilArmed)
	switch {
	case errors.Is(err, ErrSteppedDown):
		l.steppedDown = true
		l.why = Reason{Kind: SteppedDown, Until: l.quietUntil}
		return machine.Move{Trigger: machine.WorkEnded, Cause: err}, true
	case healthy:
		l.quickEnds, l.endedByItself = 1, true
	default:
		l.quickEnds++
		l.endedByItself = true
	}
	l.noteErr(err)
	if l.why.Kind != Refused { // a guard that ended the work is the reason, not the work
		l.why = Reason{Kind: WorkEnded, Err: err.Error()}
	}
	return machine.Move{Trigger: machine.WorkEnded, Cause: err}, true
}

// deafUntilArmed bounds the deafness between the end of the work and the
// arming of the wait (stopping the work and releasing the lock take place
// in between, each bounded by StopTimeout); BeginWait replaces it.
const deafUntilArmed = time.Minute

// stepDown cancels the work of the leadership that holds token, if it
// runs, with ErrSteppedDown, and starts the hold: the partition is left
// to the others (Snapshot.Avoiding) from now on.
func (l *Lane) stepDown(token int64) {
	if !l.working() || l.lease == nil || l.lease.Token() != token || !l.lease.Valid() {
		l.log.Debug("step-down request not for this leadership", "token", token)
		return
	}
	l.log.Info("stepping down on request", "token", token, "holdMs", l.cfg.StepDownHold.Milliseconds())
	l.quietUntil = time.Now().Add(l.cfg.StepDownHold)
	l.why = Reason{Kind: SteppedDown, Until: l.quietUntil}
	l.work.cancel(ErrSteppedDown)
}

// extendWork moves the work's deadline to the renewed lease's deadline. If
// the old deadline already fired, the work is gone and the renew does not
// count. Work that is ending any other way (a step-down, an error) keeps
// the renewed lease: its WORK_ENDED, which may come only once a job's
// command has stopped, gives the leadership up through cleanup and a
// release with the notice, which a failed renew (pause_work, no release)
// would skip.
func (l *Lane) extendWork(lease *redislock.Lease) error {
	w := l.work
	if w == nil || w.timer == nil {
		return nil
	}
	switch cause := context.Cause(w.ctx); {
	case errors.Is(cause, ErrLeaseExpired):
		return fmt.Errorf("work already stopped: %w", cause)
	case cause != nil:
		return nil
	}
	w.timer.Reset(time.Until(lease.Deadline()))
	return nil
}

// StopWork is the Call of pause_work and cleanup (machine.Lane): the work
// is cancelled now, and the Call waits for it to return, within
// StopTimeout. There may be no work (cleanup after a failed acquire).
func (l *Lane) StopWork() machine.Call {
	w := l.work
	l.work = nil
	if w != nil && !w.ended {
		// Stopped, not ended by itself: a leadership that lasted counts as
		// healthy, and nothing is to be told at its release.
		if time.Since(w.started) >= w.healthy {
			l.quickEnds = 0
		}
		l.endCause = nil
		if w.timer != nil {
			w.timer.Stop()
		}
		w.cancel(errWorkStopped)
	}
	timeout := l.cfg.StopTimeout
	return func(ctx context.Context) machine.Result {
		if w == nil {
			return done{}
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		select {
		case <-w.done:
			return done{}
		case <-ctx.Done():
			return done{err: fmt.Errorf("work did not stop in time: %w", ctx.Err())}
		}
	}
}

// Release is releasing_lock's Call (machine.Lane); the chart enters it
// only after StopWork. A lease still valid is a leadership given up on
// purpose: BeforeRelease is told first, with why its work ended.
func (l *Lane) Release() machine.Call {
	lease, cause := l.lease, l.endCause
	l.lease, l.endCause = nil, nil
	timeout := l.cfg.StopTimeout
	return func(ctx context.Context) machine.Result {
		if lease == nil {
			return done{}
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if l.cfg.BeforeRelease != nil && lease.Valid() {
			l.cfg.BeforeRelease(ctx, lease.Token(), cause)
		}
		err := l.cfg.Lock.Release(ctx, lease)
		if err != nil {
			l.log.Warn("release failed; the lease will expire on its own", "err", err,
				"expires_in_ms", max(0, time.Until(lease.Deadline()).Milliseconds()))
		}
		return done{err: err}
	}
}

// done is the result of a Call that leaves nothing to apply or undo.
type done struct{ err error }

func (d done) Apply() error          { return d.err }
func (done) Discard(context.Context) {}
