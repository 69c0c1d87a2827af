package machine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/qmuntal/stateless"
)

// ErrRunTwice is returned by a second call to Run.
var ErrRunTwice = errors.New("machine: Run called more than once")

// Machine runs the chart for one Lane. Build it with New, drive it with
// Run on one goroutine, and talk to it from any goroutine with Stop, Post
// and State.
type Machine struct {
	lane Lane
	log  *slog.Logger
	sm   *stateless.StateMachine

	state  atomic.Int64  // current State, for State() from any goroutine
	events chan event    // timers and Call results
	stop   chan struct{} // closed by Stop
	once   sync.Once
	inbox  mailbox
	ran    atomic.Bool
	exited chan struct{}  // closed when Run's loop is over
	wg     sync.WaitGroup // Call goroutines and armed timers

	// Owned by Run's goroutine (stateless calls the hooks on it, inside Fire).
	base     context.Context // Run's ctx without its cancellation
	scope    *scope
	lastCall chan struct{} // closed when the last Call returned
	cause    error         // the error behind the trigger being fired
	// routineStep: the transition being fired is a step of one of the
	// chart's two loops (Routine).
	routineStep bool
	// stopRequested is set once STOP fired: releasing_lock then ends in
	// idle, not back among the followers.
	stopRequested bool
	// noticeInAcquire is a release notice that came while an acquire was in
	// flight: that attempt may have reached Redis just before the release
	// and failed, so the notice is replayed if the machine then waits.
	noticeInAcquire bool
	// shutdown: Stop was called or Run's ctx is done.
	shutdown bool
}

// New validates cfg and builds a machine in idle.
func New(cfg Config) (*Machine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		lane:   cfg.Lane,
		log:    cfg.Logger,
		events: make(chan event),
		stop:   make(chan struct{}),
		inbox:  mailbox{wake: make(chan struct{}, 1)},
		exited: make(chan struct{}),
	}
	m.state.Store(int64(Idle))
	// External storage so State() is an atomic read, never a call into
	// stateless from another goroutine. Queued mode: Fire is only ever
	// called by Run, and entry actions never fire.
	m.sm = stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return m.State(), nil },
		func(_ context.Context, s stateless.State) error { m.state.Store(int64(s.(State))); return nil },
		stateless.FiringQueued,
	)
	m.configure(m.sm)
	return m, nil
}

// Run is the lane's owner goroutine. It keeps the chart in idle until the
// lane contends, then turns timers, Call results, messages and Stop into
// triggers, until Stop (or the end of ctx) has brought the chart back to
// idle, and returns nil. Cancelling ctx acts as Stop; cleanup and release
// then run under a context that keeps ctx's values but not its
// cancellation. Run returns only after every goroutine it started has
// returned. It may be called once.
func (m *Machine) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	m.base = context.WithoutCancel(ctx)
	m.scope = m.openScope(0)
	defer func() {
		close(m.exited)
		m.closeScope()
		m.wg.Wait()
	}()

	in := inputs{stop: m.stop, done: ctx.Done()}
	select { // stopped before it started: nothing to clean up
	case <-in.stop:
		m.shutdown = true
	case <-in.done:
		m.shutdown = true
	default:
	}
	for {
		if err := m.settle(); err != nil {
			return err
		}
		if m.shutdown && m.State() == Idle {
			return nil
		}
		if err := m.next(&in); err != nil {
			return err
		}
	}
}

// inputs are Run's stop signals; each is set to nil once it has fired.
type inputs struct {
	stop <-chan struct{}
	done <-chan struct{}
}

// next waits for one input and fires the trigger it stands for, if any.
func (m *Machine) next(in *inputs) error {
	select {
	case ev := <-m.events:
		return m.take(ev)
	case <-in.stop:
		in.stop = nil
		return m.shutDown()
	case <-in.done:
		in.done = nil
		m.log.Debug("context cancelled: stopping")
		return m.shutDown()
	case <-m.inbox.wake:
		for _, msg := range m.inbox.take() {
			mv, ok := m.lane.Receive(msg)
			if !ok {
				continue
			}
			if err := m.move(mv); err != nil {
				return err
			}
		}
	}
	return nil
}

// take fires the trigger of a timer or a Call's result, unless it belongs
// to a state entry that is over: a stale timer is dropped, and a stale
// result goes back to its Call's goroutine to be discarded.
func (m *Machine) take(ev event) error {
	if ev.gen != m.scope.gen {
		m.log.Debug("stale event dropped", "trigger", ev.trigger.String(), "gen", ev.gen,
			"state", m.State().String(), "currentGen", m.scope.gen)
		if ev.applied != nil {
			ev.applied <- false
		}
		return nil
	}
	if ev.result == nil {
		return m.fire(ev.trigger, nil)
	}
	err := ev.result.Apply()
	ev.applied <- true
	t := ev.trigger
	if err != nil {
		t = ev.failed
	}
	return m.fire(t, err)
}

// move fires what the lane asked for. A release notice during an acquire
// is kept for the wait that follows if that attempt fails.
func (m *Machine) move(mv Move) error {
	if mv.Trigger == ReleaseNotice && m.State() == AcquiringLock {
		m.noticeInAcquire = true
		return nil
	}
	return m.fire(mv.Trigger, mv.Cause)
}

// settle runs after every input: a notice kept during a failed acquire is
// replayed, the chart follows what the lane wants (reconcile), and the
// lane publishes the state it is now in.
func (m *Machine) settle() error {
	err := m.replay()
	if err == nil {
		err = m.reconcile()
	}
	m.lane.Settled(m.State())
	return err
}

func (m *Machine) replay() error {
	if !m.noticeInAcquire || m.State() == AcquiringLock {
		return nil
	}
	m.noticeInAcquire = false
	if m.State() != WaitingToAcquireLock {
		return nil
	}
	m.log.Debug("replaying a release notice that came during the failed attempt")
	return m.fire(ReleaseNotice, nil)
}

// reconcile moves the chart towards what the lane wants: out of idle to
// contend, back to idle (cleanup, release) when it no longer does. A
// chart on its way to idle (STOP fired) gets there first; after Stop
// nothing leaves idle again.
func (m *Machine) reconcile() error {
	if m.shutdown {
		return nil
	}
	switch idle, want := m.State() == Idle, m.lane.Contends(); {
	case want && idle:
		m.stopRequested = false
		return m.fire(TryAcquireLock, nil)
	case !want && !idle && !m.stopRequested:
		return m.fireStop()
	}
	return nil
}

// shutDown takes Stop or the end of Run's ctx: STOP, unless the chart is
// idle already (it holds nothing to clean up).
func (m *Machine) shutDown() error {
	m.shutdown = true
	if m.State() == Idle || m.stopRequested {
		return nil
	}
	return m.fireStop()
}

// fireStop fires STOP and remembers it, so that a leadership already on
// its way out after WORK_ENDED ends in idle rather than rejoining.
func (m *Machine) fireStop() error {
	m.stopRequested = true
	return m.fire(Stop, nil)
}

// fire is the only caller of stateless's Fire. Every action and hook
// returns nil, so an error here is a bug in the chart; Run gives up rather
// than run a machine whose queue stateless has left half processed.
func (m *Machine) fire(t Trigger, cause error) error {
	m.cause = cause
	defer func() { m.cause = nil }()
	if err := m.sm.Fire(t); err != nil {
		return fmt.Errorf("machine: %v in %v: %w", t, m.State(), err)
	}
	return nil
}

// Stop asks Run to stop: STOP leads through cleanup and releasing_lock to
// idle. Safe from any goroutine, never blocks, and idempotent; a Stop
// before Run makes Run return at once.
func (m *Machine) Stop() {
	m.once.Do(func() { close(m.stop) })
}

// Post hands msg to the lane: Run passes it to Lane.Receive on its own
// goroutine, in the order posted. Safe from any goroutine, Run's own
// included, and never blocks; a message posted after Run returned is
// dropped.
func (m *Machine) Post(msg any) {
	select {
	case <-m.exited:
		return
	default:
		m.inbox.put(msg)
	}
}

// State returns the current state; safe from any goroutine.
func (m *Machine) State() State {
	return State(m.state.Load())
}

// mailbox is the lane's messages on their way to Run: a queue that never
// blocks its senders, and a wake-up that coalesces.
type mailbox struct {
	mu   sync.Mutex
	msgs []any
	wake chan struct{}
}

func (b *mailbox) put(msg any) {
	b.mu.Lock()
	b.msgs = append(b.msgs, msg)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *mailbox) take() []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	msgs := b.msgs
	b.msgs = nil
	return msgs
}
