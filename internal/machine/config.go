package machine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"
)

// Config gives the machine the callbacks it drives. The machine calls
// Acquire, Renew, StopWork and Release one at a time, each in its own
// goroutine, with a context cancelled when the state that invoked it is
// left; StartWork, RetryDelay and OnTransition run on Run's goroutine.
type Config struct {
	// Acquire tries once to take the lock; nil means acquired. Required.
	Acquire func(ctx context.Context) error
	// Renew extends the lease; an error pauses the work. Required.
	Renew func(ctx context.Context) error
	// Release gives the lock up; its error is logged, not retried.
	// Required.
	Release func(ctx context.Context) error
	// StartWork starts the work in the background and must not block. It
	// is called once per acquisition, not on renewals. If the work ends by
	// itself (returns, fails or panics) before StopWork stops it, call
	// ended once with why: the leadership is then given up (WORK_ENDED:
	// stop work, release the lock, wait, acquire afresh). ended never
	// blocks and is safe from any goroutine; a call that comes after its
	// leadership ended changes nothing. Required.
	StartWork func(ended func(err error))
	// StopWork stops the work and waits for it. It may be called when no
	// work runs (cleanup after a failed acquire). Required.
	StopWork func(ctx context.Context) error
	// RenewInterval is how long working lasts before renew_lock.
	// Required, > 0.
	RenewInterval time.Duration
	// RetryDelay is called on each entry to waiting_to_acquire_lock and
	// says how long to wait before the next attempt; the caller adds jitter
	// and caps it at the holder's TTL. Required.
	RetryDelay func() time.Duration
	// Held, optional, tells an Acquire error that only says another
	// holder has the lock (a follower's routine retry: its ACQUIRE_FAILED
	// is logged at DEBUG) from a fault (logged at INFO, with the error).
	// Default: every Acquire error is a fault.
	Held func(err error) bool
	// Logger defaults to discarding. Give it one that already carries
	// workerId.
	Logger *slog.Logger
	// OnTransition, optional, is called on Run's goroutine after each
	// transition, for metrics and status. It must not block.
	OnTransition func(from, to State, trigger Trigger)
	// Resident makes the machine one of many a replica drives (one per
	// partition): Run starts it in idle and keeps it there until Contend,
	// Leave brings it back to idle through cleanup and releasing_lock, and
	// Run returns only once the machine is idle after Stop (or ctx). By
	// default Run fires TRY_ACQUIRE_LOCK at once and returns when STOP has
	// brought the machine back to idle.
	Resident bool
}

// validate reports every missing or bad field at once and fills defaults.
func (c *Config) validate() error {
	var errs []error
	required := func(ok bool, field string) {
		if !ok {
			errs = append(errs, errors.New("machine: "+field+" is required"))
		}
	}
	required(c.Acquire != nil, "Acquire")
	required(c.Renew != nil, "Renew")
	required(c.Release != nil, "Release")
	required(c.StartWork != nil, "StartWork")
	required(c.StopWork != nil, "StopWork")
	required(c.RetryDelay != nil, "RetryDelay")
	if c.RenewInterval <= 0 {
		errs = append(errs, errors.New("machine: RenewInterval must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Held == nil {
		c.Held = func(error) bool { return false }
	}
	if c.OnTransition == nil {
		c.OnTransition = func(State, State, Trigger) {}
	}
	return nil
}
