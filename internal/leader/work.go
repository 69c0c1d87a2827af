package leader

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

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

// running is the work of one leadership: its context is the one owner of
// the lease deadline (timer re-armed by each renewal).
type running struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer // cancels ctx at the lease deadline
	done    chan struct{}
	started time.Time
	// healthy is how long the work must run for its leadership to count
	// as healthy: the lease's validity when it was granted.
	healthy time.Duration
}

// StartWork runs the work in the background under a context that is
// cancelled at the lease deadline or by StopWork. When the work ends any
// other way (it returns, fails or panics, or the deadline passed), its
// context is cancelled at once, so Status stops reporting leadership, and
// ended is called with why, so the machine gives the leadership up.
func (l *Leader) StartWork(ended func(error)) {
	lease := l.currentLease()
	if lease == nil {
		ended(errors.New("leader: no lease to work under"))
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &running{ctx: ctx, cancel: cancel, done: make(chan struct{}),
		started: time.Now(), healthy: time.Until(lease.Deadline())}
	w.timer = time.AfterFunc(time.Until(lease.Deadline()), func() {
		cancel(ErrLeaseExpired)
		l.log.Warn("lease deadline passed: work stopped", "token", lease.Token())
	})
	l.mu.Lock()
	l.work = w
	l.mu.Unlock()
	go func() {
		defer close(w.done)
		err := l.runWork(ctx, lease)
		if errors.Is(context.Cause(ctx), errWorkStopped) {
			l.workDone(w, nil)
			return
		}
		switch {
		case errors.Is(context.Cause(ctx), ErrSteppedDown):
			err = ErrSteppedDown // however the work took its cancellation
		case err != nil:
		case context.Cause(ctx) != nil:
			err = context.Cause(ctx)
		default:
			err = ErrWorkReturned
		}
		w.timer.Stop()
		cancel(err)
		l.workDone(w, err)
		ended(err) // the machine's transition logs err
	}()
}

// runWork runs the work, turning a panic into an error after logging it
// with its stack, once: a bug in the work ends the leadership, never the
// process.
func (l *Leader) runWork(ctx context.Context, lease *redislock.Lease) (err error) {
	defer func() {
		if v := recover(); v != nil {
			l.log.Error("work panicked", "panic", fmt.Sprint(v), "token", lease.Token(), "stack", string(debug.Stack()))
			err = fmt.Errorf("leader: work panicked: %v", v)
		}
	}()
	return l.cfg.Work(ctx, lease)
}

// workDone counts how the work of a leadership ended, for RetryDelay; err
// is why it ended by itself, nil when it was stopped. Work that ended by
// itself before the lease's validity had passed is a quick failure: the
// next wait backs off, longer after each consecutive one. A leadership
// that lasted at least that long is healthy and resets the count. Work
// that ended by itself also makes the replica deaf to release notices
// from now until its wait is armed (RetryDelay then deafens it for the
// wait), so the notice of its own release, which may reach it before or
// after the machine enters waiting_to_acquire_lock, never cuts the wait
// short. A step-down is no failure: its wait is the hold.
func (l *Leader) workDone(w *running, err error) {
	healthy := time.Since(w.started) >= w.healthy
	byItself := err != nil
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endCause = err
	if byItself {
		l.deafUntil = time.Now().Add(deafUntilArmed)
	}
	switch {
	case errors.Is(err, ErrSteppedDown):
		l.steppedDown = true
	case healthy && byItself:
		l.quickEnds, l.endedByItself = 1, true
	case healthy:
		l.quickEnds = 0
	case byItself:
		l.quickEnds++
		l.endedByItself = true
	}
	if byItself && !errors.Is(err, ErrSteppedDown) {
		l.noteErr(err)
	}
}

// StepDown gives up the leadership of token, if this replica holds it and
// its work runs: the work is cancelled with ErrSteppedDown, which ends the
// leadership the way work that ends does (stop, release with the notice,
// rejoin the followers), and the replica then holds off for StepDownHold
// so another takes over. It reports whether it stepped down; asking again,
// or for another token, does nothing.
func (l *Leader) StepDown(token int64) bool {
	l.mu.Lock()
	lease, w := l.lease, l.work
	l.mu.Unlock()
	if lease == nil || w == nil || lease.Token() != token || !lease.Valid() || w.ctx.Err() != nil {
		return false
	}
	l.log.Info("stepping down on request", "token", token, "holdMs", l.cfg.StepDownHold.Milliseconds())
	w.cancel(ErrSteppedDown)
	return true
}

// deafUntilArmed bounds the deafness between the end of the work and the
// arming of the wait (stopping the work and releasing the lock take place
// in between, each bounded by the shutdown budget); RetryDelay replaces it.
const deafUntilArmed = time.Minute

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

// extendWork moves the work's deadline to the renewed lease's deadline. If
// the old deadline already fired, the work is gone and the renew does not
// count: leadership is given up and the next acquire brings a new token.
// Work that is ending any other way (a step-down, an error) keeps the
// renewed lease: its WORK_ENDED, which may come only once a job's command
// has stopped, gives the leadership up through cleanup and a release with
// the notice, which a failed renew (pause_work, no release) would skip.
func (l *Leader) extendWork(lease *redislock.Lease) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.work
	if w == nil {
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
