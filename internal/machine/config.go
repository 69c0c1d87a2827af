package machine

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Config configures a Machine.
type Config struct {
	// Lane is the leadership the machine drives. Required.
	Lane Lane
	// Logger defaults to discarding. Give it one that already carries
	// workerId (and the partition, when there are several).
	Logger *slog.Logger
}

// Lane is the leadership of one lock that a Machine drives. Run calls
// every method on its own goroutine, the lane's owner, one call at a
// time, so a Lane keeps its state in plain fields, without a lock; no
// method may block.
type Lane interface {
	// Acquire, Renew, StopWork and Release return the I/O of their state
	// (acquiring_lock, renew_lock, pause_work and cleanup, releasing_lock):
	// a Call, which Run starts in its own goroutine. They are called on
	// entry, so what the Call needs is read from the lane then.
	Acquire() Call
	Renew() Call
	StopWork() Call
	Release() Call
	// StartWork starts the work of the leadership just acquired, in the
	// background. It is called once per acquisition, not on renewals.
	// Work that ends by itself reaches the lane as a message (Post), and
	// Receive answers it with WORK_ENDED: stop the work, release, wait,
	// acquire afresh.
	StartWork()
	// RenewIn is how long working lasts before renew_lock, asked on each
	// entry to working.
	RenewIn() time.Duration
	// BeginWait is asked on each entry to waiting_to_acquire_lock: the wait
	// begins, and how long it lasts before the next attempt.
	BeginWait() time.Duration
	// Contends reports whether the lane competes for its lock now. Run
	// keeps an idle lane idle until it does, and takes a competing lane
	// back to idle (STOP: stop the work, release the lock) when it no
	// longer does.
	Contends() bool
	// Receive applies a message that Post delivered and says which
	// trigger, if any, it fires.
	Receive(msg any) (Move, bool)
	// Routine reports whether an acquire error only says what the lane
	// knows already (the lock is held elsewhere; a condition said once):
	// the follower's retry is then logged at DEBUG, not INFO.
	Routine(err error) bool
	// Transitioned is told of every transition, once it is complete.
	Transitioned(from, to State, trigger Trigger)
	// Settled is called after every input Run handled (a timer, a Call's
	// result, a message, Stop), with the state the chart is now in: the
	// lane publishes what readers see from here.
	Settled(s State)
}

// Call is the I/O of one state entry. Run starts it in its own goroutine,
// once the previous Call returned (Calls never overlap), under a context
// that is cancelled when the state is left and keeps the values of Run's.
type Call func(ctx context.Context) Result

// Result is what a Call found, handed back to Run's goroutine as data.
type Result interface {
	// Apply runs on Run's goroutine while the state entry that made the
	// Call is current. It updates the lane and returns the Call's error:
	// nil fires the state's success trigger, an error its failure trigger.
	Apply() error
	// Discard runs instead of Apply, in the Call's goroutine, once that
	// state entry is over: the result must not move the lane, and Discard
	// undoes what the Call left behind (a lease won after its state was
	// left is released). The next Call starts only after Discard
	// returned. ctx carries Run's values but no cancellation.
	Discard(ctx context.Context)
}

// Move is a trigger a lane asks Run to fire, with the error behind it,
// which the transition's log line carries.
type Move struct {
	Trigger Trigger
	Cause   error
}

// validate reports every missing field and fills defaults.
func (c *Config) validate() error {
	if c.Lane == nil {
		return errors.New("machine: Lane is required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
