package leader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// Config configures a Lane.
type Config struct {
	// Partition is the lane's partition (0 with one lock). >= 0.
	Partition int
	// Lock is the partition's lock. Required.
	Lock Lock
	// Renewer renews the lane's lease. Required.
	Renewer LeaseRenewer
	// WorkerID names this replica to people. Required.
	WorkerID string
	// Work is the leader's work. Required.
	Work Work
	// RetryInterval is the follower's polling period; required, > 0. The
	// waits after failures back off from it (see BeginWait).
	RetryInterval time.Duration
	// StepDownHold is how long a lane that stepped down (StepDown) waits
	// before it competes again, deaf to release notices meanwhile, so
	// another replica takes over. Default 2 x RetryInterval.
	StepDownHold time.Duration
	// StopTimeout bounds stopping the work and releasing the lock, each.
	// Default 10s.
	StopTimeout time.Duration
	// MayLead, optional, is asked before each acquire and as each
	// leadership's work starts: nil when this replica may lead, else why
	// not (the partition count is not checked yet, Redis evicts keys).
	// See GuardsChanged. Default: always nil.
	MayLead func() error
	// Said, optional, reports an acquire error said elsewhere (a master
	// short of replicas: the lane's reason once, a WARN after a grace):
	// its retries are routine.
	Said func(err error) bool
	// Acquired, optional, is told the result of every acquire sent to
	// Redis (not those a guard refused), on the lane's goroutine.
	Acquired func(err error)
	// BeforeRelease, optional, is called with the token of a lease that is
	// still valid, just before the lock is given up, and with why the
	// leadership's work ended: nil when it was stopped (a shutdown, a
	// handover), ErrSteppedDown, or the error it ended with. It runs on
	// the release's goroutine and must honour ctx.
	BeforeRelease func(ctx context.Context, token int64, cause error)
	// Changed, optional, is called on the lane's goroutine with the old
	// and the new snapshot when what readers see changed: the phase
	// (machine.State.Steady), the reason, the token, or the hold. It must
	// not block.
	Changed func(prev, next *Snapshot)
	// Transitioned, optional, is told of every transition, on the lane's
	// goroutine. It must not block.
	Transitioned func(from, to machine.State, trigger machine.Trigger)
	// Observer, optional, is told the latency and result of every acquire
	// and renew attempt, for metrics.
	Observer Observer
	// Logger defaults to discarding. Give it one that carries workerId
	// (and the partition, when there are several).
	Logger *slog.Logger
}

// validate reports every missing or bad field at once and fills defaults.
func (c *Config) validate() error {
	var errs []error
	bad := func(msg string) { errs = append(errs, errors.New("leader: "+msg)) }
	if c.Partition < 0 {
		bad("Partition must not be negative")
	}
	if c.Lock == nil {
		bad("Lock is required")
	}
	if c.Renewer == nil {
		bad("Renewer is required")
	}
	if c.WorkerID == "" {
		bad("WorkerID is required")
	}
	if c.Work == nil {
		bad("Work is required")
	}
	if c.RetryInterval <= 0 {
		bad("RetryInterval must be positive")
	}
	if c.StepDownHold < 0 || c.StopTimeout < 0 {
		bad("StepDownHold and StopTimeout must not be negative")
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.StepDownHold == 0 {
		c.StepDownHold = 2 * c.RetryInterval
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
	return nil
}
