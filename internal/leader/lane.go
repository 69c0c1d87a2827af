package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// Lease is what the work is told about its leadership.
type Lease interface {
	Token() int64
	Deadline() time.Time
	Valid() bool
}

// Lock is what a lane needs of its lock. Renewals go through the Renewer.
type Lock interface {
	Acquire(ctx context.Context, workerID string, floor int64) (*redislock.Lease, error)
	Release(ctx context.Context, lease *redislock.Lease) error
	Reissue(ctx context.Context, lease *redislock.Lease, floor int64) (*redislock.Lease, error)
	Holder(ctx context.Context) (redislock.Holder, error)
}

var (
	_ Lock         = (*redislock.Locker)(nil)
	_ LeaseRenewer = (*Renewer)(nil)
)

// LeaseRenewer renews a lane's lease: the replica's one renewal path
// (Renewer is this package's).
type LeaseRenewer interface {
	// Renew extends lease, partition's, as redislock.Locker.Renew does.
	Renew(ctx context.Context, partition int, lease *redislock.Lease) error
	// Next is how long until the replica's next renewal tick.
	Next() time.Duration
}

// Work is what the leader does. It runs until ctx is done and must stop
// soon after; anything it writes must be fenced with lease.Token().
type Work func(ctx context.Context, lease Lease) error

// Observer is told how long each lock call took and how it went. Calls
// come from the lane's Call goroutines and must not block.
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

// Lane is the leadership of one lock (one partition's): the chart's
// state, the lease and its renewal, the backoff, the step-down's quiet
// time, the deafness to notices and the guards' verdicts, in one value
// that one goroutine owns (Run: the machine's owner goroutine, the only
// caller of every method the machine drives). Other goroutines talk to it
// by message (Contend, NotifyReleased, StepDown, GuardsChanged, Observe,
// Stop) and read what it publishes (Snapshot).
type Lane struct {
	cfg  Config
	log  *slog.Logger
	m    *machine.Machine
	snap atomic.Pointer[Snapshot]
	wg   sync.WaitGroup // the works' goroutines

	// Everything below is Run's goroutine's alone.

	state  machine.State
	since  time.Time // entered state's phase (machine.State.Steady)
	recent []Transition

	planned  bool // told whether to contend at least once
	contend  bool // compete for the lock (this replica's share, or standing by)
	stopping bool // Stop, or Run's ctx done

	lease *redislock.Lease // from a successful acquire until its release; may outlive its leadership
	work  *running         // the current leadership's work; nil when none runs
	leads uint64           // leaderships started

	// highest is the highest token this lane has held; observed the
	// highest it has seen anywhere (its own, the holder's a refused
	// acquire named, what Observe was told): every acquire passes it as
	// the floor. regressed is the floor of the last epoch regression
	// logged, so one loss of data is logged once.
	highest, observed, regressed int64
	holder                       holderSeen // who held the lock at the last refused acquire

	// What BeginWait backs off on: consecutive acquire errors (the last
	// one an ErrReplicas?), and leaderships whose work ended by itself
	// quickly, one after another (endedByItself: the last one did, and no
	// wait has been armed since). steppedDown: the last leadership
	// stepped down; its wait is the hold. endCause is why the current
	// lease's work ended by itself (nil when stopped), for BeforeRelease.
	acquireErrs   int
	replicasLast  bool
	heldTTL       time.Duration // the holder's lease left, at the last refused acquire
	quickEnds     int
	endedByItself bool
	steppedDown   bool
	endCause      error
	// quietUntil ends the hold after a step-down (the partition is left
	// to the others until then); deafUntil ends the deafness to release
	// notices after a leadership whose work ended by itself; waitUntil is
	// when the current wait ends.
	quietUntil, deafUntil, waitUntil time.Time

	paused  bool   // the current leadership's work said its queue is paused (QueuePaused)
	why     Reason // what the latest event says of why the lane does not lead
	said    Reason // the reason last logged
	lastErr error  // the latest error met, for the fleet registry
	lastAt  time.Time
	redisOK bool // the last lock command got an answer
}

// holderSeen is the holder an acquire found, named once per token.
type holderSeen struct {
	worker string
	token  int64
}

// New validates cfg and returns a Lane in idle, not contending.
func New(cfg Config) (*Lane, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Lane{cfg: cfg, log: cfg.Logger, since: time.Now(), why: Reason{Kind: Unplanned}}
	var err error
	if l.m, err = machine.New(machine.Config{Lane: l, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	l.Settled(machine.Idle)
	return l, nil
}

// Run runs the lane until Stop or the end of ctx has brought it back to
// idle, and returns nil; it returns only once every goroutine it started
// has returned. A lane that leads gives its leadership up on the way out:
// its work is stopped and its lock released (with the notice). Call it
// once.
func (l *Lane) Run(ctx context.Context) error {
	defer l.wg.Wait()
	stop := context.AfterFunc(ctx, func() { l.m.Post(stopping{}) })
	defer stop()
	return l.m.Run(ctx)
}

// Stop makes Run give the leadership up and return. Safe from any
// goroutine, never blocks.
func (l *Lane) Stop() {
	l.m.Post(stopping{})
	l.m.Stop()
}

// Snapshot is what the lane published last: safe from any goroutine,
// never nil, never changed.
func (l *Lane) Snapshot() *Snapshot { return l.snap.Load() }

// Partition is the lane's partition.
func (l *Lane) Partition() int { return l.cfg.Partition }

// Contend tells the lane whether to compete for its lock: it is this
// replica's share, or the replica stands by. A lane that stops
// contending gives its leadership up (stop the work, release the lock
// with the notice) and waits in idle. Never blocks.
func (l *Lane) Contend(want bool) { l.m.Post(share{want: want}) }

// NotifyReleased tells the lane its lock was just released elsewhere: a
// waiting lane tries at once, unless it is backing off after its own
// leadership ended (its own release's notice among those). Never blocks.
func (l *Lane) NotifyReleased() { l.m.Post(released{}) }

// StepDown gives up the leadership of token, if this lane holds it and
// its work runs: the work ends with ErrSteppedDown, which ends the
// leadership the way work that ends does (stop, release with the
// notice), and the lane then holds off for StepDownHold, deaf to release
// notices, so another replica takes over. Asking again, or for another
// token, does nothing. Never blocks.
func (l *Lane) StepDown(token int64) { l.m.Post(stepDown{token: token}) }

// GuardsChanged says what Config.MayLead answers may have changed: a lane
// whose work runs while a guard now refuses ends it (and so its
// leadership); a lane that waits because a guard refused tries at once
// when none does. Never blocks.
func (l *Lane) GuardsChanged() { l.m.Post(guardsChanged{}) }

// QueuePaused tells the lane that the queue its leadership works on is
// paused by an operator (on), or runs again: a leading lane then gives
// Paused as its reason, in its snapshot and its log, while it keeps its
// lease. The work says it (the job worker, as it reads the pause flag);
// a new leadership starts unpaused until its work says otherwise. Never
// blocks.
func (l *Lane) QueuePaused(on bool) { l.m.Post(queuePaused{on: on}) }

// Observe tells the lane of a token handed out for its lock, seen
// outside its own acquires (a registry record, the history): the next
// acquire's floor is at least that. Never blocks.
func (l *Lane) Observe(token int64) {
	if token > l.Snapshot().Observed {
		l.m.Post(observed{token: token})
	}
}

// The lane's messages, posted by the methods above and by the work.
type (
	share         struct{ want bool }
	released      struct{}
	stepDown      struct{ token int64 }
	guardsChanged struct{}
	queuePaused   struct{ on bool }
	observed      struct{ token int64 }
	stopping      struct{}
	workEnded     struct {
		w   *running
		err error
	}
)

// Receive applies a message (machine.Lane).
func (l *Lane) Receive(msg any) (machine.Move, bool) {
	switch msg := msg.(type) {
	case share:
		l.planned, l.contend = true, msg.want
	case released:
		if time.Now().Before(l.deafUntil) {
			l.log.Debug("release notice not heard: backing off after this lane's leadership ended")
			break
		}
		return machine.Move{Trigger: machine.ReleaseNotice}, true
	case stepDown:
		l.stepDown(msg.token)
	case guardsChanged:
		return l.guardsChanged()
	case queuePaused:
		l.paused = msg.on && l.work != nil
	case observed:
		l.observed = max(l.observed, msg.token)
	case stopping:
		l.stopping = true
	case workEnded:
		return l.workEnded(msg.w, msg.err)
	}
	return machine.Move{}, false
}

// guardsChanged ends the work of a leadership a guard now refuses, and
// retries at once where a guard's refusal was the last attempt's answer
// and none refuses now.
func (l *Lane) guardsChanged() (machine.Move, bool) {
	err := l.mayLead()
	switch {
	case err != nil && l.working():
		l.why = refusedReason(err)
		l.work.cancel(err) // work that ends ends the leadership
	case err == nil && l.state == machine.WaitingToAcquireLock && l.why.Kind == Refused:
		return machine.Move{Trigger: machine.RetryTimer}, true
	}
	return machine.Move{}, false
}

// mayLead asks the guards.
func (l *Lane) mayLead() error {
	if l.cfg.MayLead == nil {
		return nil
	}
	return l.cfg.MayLead()
}

// Contends reports whether the lane competes now (machine.Lane).
func (l *Lane) Contends() bool { return l.contend }

// Routine: an acquire error that says the lock is held elsewhere, or
// repeats what was said once already (machine.Lane).
func (l *Lane) Routine(err error) bool {
	return HeldByAnother(err) || (l.cfg.Said != nil && l.cfg.Said(err))
}

// HeldByAnother reports whether an error of Acquire only says that another
// holder has the lock: a follower's routine, not a fault.
func HeldByAnother(err error) bool {
	var held *redislock.HeldError
	return errors.As(err, &held)
}

// noteErr remembers err for the fleet registry's lastError.
func (l *Lane) noteErr(err error) { l.lastErr, l.lastAt = err, time.Now() }
