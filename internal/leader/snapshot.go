package leader

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// recentTransitions is how many of its transitions a lane keeps for the
// dashboard's chart.
const recentTransitions = 10

// Snapshot is a lane as its owner published it after its latest change:
// immutable, so any goroutine reads it without a lock.
type Snapshot struct {
	Partition int
	// State is the chart's state.
	State machine.State
	// Token and Deadline are the lease's while the lane leads (working or
	// renew_lock, its work running); 0 and zero otherwise.
	Token    int64
	Deadline time.Time
	// Reason says why the lane does not lead; its Kind is Leading while it
	// leads, or Paused while it leads a queue an operator paused.
	Reason Reason
	// Since is when the lane entered its phase (State.Steady).
	Since time.Time
	// QuietUntil ends the hold after a step-down: until then the lane
	// leaves its partition to the others (Avoiding).
	QuietUntil time.Time
	// Observed is the highest token the lane has seen for its lock.
	Observed int64
	// LastError is the latest error the lane met (an acquire or renew that
	// failed, work that ended with an error), and when; "" before any.
	LastError   string
	LastErrorAt time.Time
	// RedisOK: the lane's last lock command got an answer.
	RedisOK bool
	// Recent are the latest transitions, oldest first.
	Recent []Transition

	work <-chan struct{} // closed when the leadership's work ends; nil when none
}

// Transition is one move of a lane's chart.
type Transition struct {
	From, To machine.State
	Trigger  machine.Trigger
	At       time.Time
}

// Leads reports whether the lane leads right now: it holds a lease whose
// deadline has not passed, and its work runs.
func (s *Snapshot) Leads() bool {
	if s.work == nil || !time.Now().Before(s.Deadline) {
		return false
	}
	select {
	case <-s.work:
		return false
	default:
		return true
	}
}

// LeaseLeft is how long the lease has left while the lane leads; 0 when
// it does not.
func (s *Snapshot) LeaseLeft() time.Duration {
	if !s.Leads() {
		return 0
	}
	return time.Until(s.Deadline)
}

// Avoiding reports that the lane stepped down and leaves its partition to
// the others for now.
func (s *Snapshot) Avoiding() bool { return time.Now().Before(s.QuietUntil) }

// differs reports whether o and s differ in what readers act on.
func (s *Snapshot) differs(o *Snapshot) bool {
	return s.State.Steady() != o.State.Steady() || !s.Reason.same(o.Reason) || s.Token != o.Token ||
		!s.QuietUntil.Equal(o.QuietUntil) || s.LastError != o.LastError
}

// Transitioned records a transition (machine.Lane).
func (l *Lane) Transitioned(from, to machine.State, trigger machine.Trigger) {
	now := time.Now()
	l.state = to
	if from.Steady() != to.Steady() {
		l.since = now
	}
	l.recent = append(l.recent, Transition{From: from, To: to, Trigger: trigger, At: now})
	if len(l.recent) > recentTransitions {
		l.recent = slices.Clone(l.recent[len(l.recent)-recentTransitions:])
	}
	if l.cfg.Transitioned != nil {
		l.cfg.Transitioned(from, to, trigger)
	}
}

// Settled publishes the lane as it is after an input, says a new reason
// once, and tells Changed (machine.Lane).
func (l *Lane) Settled(s machine.State) {
	l.state = s
	next := l.snapshot()
	prev := l.snap.Swap(next)
	l.say(next.Reason)
	if prev != nil && l.cfg.Changed != nil && next.differs(prev) {
		l.cfg.Changed(prev, next)
	}
}

func (l *Lane) snapshot() *Snapshot {
	s := &Snapshot{Partition: l.cfg.Partition, State: l.state, Reason: l.reason(), Since: l.since,
		QuietUntil: l.quietUntil, Observed: l.observed, RedisOK: l.redisOK, Recent: slices.Clip(l.recent)}
	if l.lastErr != nil {
		s.LastError, s.LastErrorAt = l.lastErr.Error(), l.lastAt
	}
	if l.leading() {
		s.Token, s.Deadline, s.work = l.lease.Token(), l.lease.Deadline(), l.work.ctx.Done()
	}
	return s
}

// leading: in working or renew_lock with the leadership's work running.
func (l *Lane) leading() bool {
	return (l.state == machine.Working || l.state == machine.RenewLock) && l.working() && l.lease != nil
}

// reason is why the lane does not lead now.
func (l *Lane) reason() Reason {
	switch {
	case l.leading() && l.paused:
		return Reason{Kind: Paused}
	case l.leading():
		return Reason{}
	case l.stopping:
		return Reason{Kind: Stopping}
	case !l.planned:
		return Reason{Kind: Unplanned}
	case !l.contend:
		return Reason{Kind: NotShare}
	case l.why.Kind == Leading || l.why.Kind == Unplanned:
		return Reason{Kind: Acquiring}
	}
	return l.why
}

// say logs a reason once, when it changes: at INFO what a contending lane
// waits on (who leads, a fault, a hold) and a leadership whose queue is
// paused, at DEBUG the rest.
func (l *Lane) say(r Reason) {
	if r.same(l.said) {
		return
	}
	l.said = r
	level, msg := slog.LevelInfo, "Waiting to lead"
	switch r.Kind {
	case Leading:
		return // the machine says "Lock acquired. Starting work"; the work says "queue resumed"
	case Paused:
		msg = "Leading, paused"
	case Unplanned, NotShare, Stopping, Acquiring:
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, msg, "reason", r.String(), "why", r.Kind.String())
}
