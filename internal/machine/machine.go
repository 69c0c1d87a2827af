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

// Machine runs the chart. Build it with New, drive it with Run on one
// goroutine, and talk to it from any goroutine with Stop, NotifyReleased
// and State, Contend and Leave when it is Resident (and, from the work, the
// ended func StartWork is given).
type Machine struct {
	cfg Config
	log *slog.Logger
	sm  *stateless.StateMachine

	state   atomic.Int64  // current State, for State() from any goroutine
	events  chan event    // timers and callback results
	stop    chan struct{} // closed by Stop
	once    sync.Once
	notices chan struct{} // one pending RELEASE_NOTICE at most
	endWake chan struct{} // one pending WORK_ENDED wake-up at most
	wake    chan struct{} // Contend or Leave changed want
	want    atomic.Bool   // Resident: contend (Contend) or stay idle (Leave)
	ran     atomic.Bool
	wg      sync.WaitGroup // callback goroutines and armed timers

	// The end of a leadership's work, as reported to workEnded: the
	// leadership's number (0 when none is pending) and why it ended.
	endMu   sync.Mutex
	endLead uint64
	endErr  error

	// Owned by Run's goroutine (stateless calls the hooks on it, inside Fire).
	base     context.Context // Run's ctx without its cancellation
	scope    *scope
	lastCall chan struct{} // closed when the last invoked callback returned
	cause    error         // the error behind the trigger being fired
	// leadership counts the works started; WORK_ENDED acts only for the
	// current one.
	leadership uint64
	// stopRequested is set once STOP fired: releasing_lock then ends in
	// idle, not back among the followers.
	stopRequested bool
	// noticeInAcquire is a release notice that came while an acquire was in
	// flight: that attempt may have reached Redis just before the release
	// and failed, so the notice is replayed if the machine then waits.
	noticeInAcquire bool
	// shutdown: Stop was called or Run's ctx is done (Resident).
	shutdown bool
}

// New validates cfg and builds a machine in idle.
func New(cfg Config) (*Machine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		cfg:     cfg,
		log:     cfg.Logger,
		events:  make(chan event),
		stop:    make(chan struct{}),
		notices: make(chan struct{}, 1),
		endWake: make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
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

// Run is the machine's owner goroutine. It fires TRY_ACQUIRE_LOCK, then
// turns timers, callback results, Stop, release notices and the end of the
// work into triggers until the machine is back in idle after STOP, and
// returns nil. Cancelling ctx acts as Stop; cleanup and release then run
// under a context that keeps ctx's values but not its cancellation. Run
// returns only after every goroutine it started has returned. It may be
// called once.
func (m *Machine) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	m.base = context.WithoutCancel(ctx)
	m.scope = m.openScope(0)
	defer func() {
		m.closeScope()
		m.wg.Wait()
	}()

	in := inputs{stop: m.stop, done: ctx.Done()}
	if m.cfg.Resident {
		return m.runResident(&in)
	}
	first := TryAcquireLock
	select { // a stop that came first still goes through cleanup and release
	case <-in.stop:
		first, in.stop = Stop, nil
	case <-in.done:
		first, in.done = Stop, nil
	default:
	}
	m.stopRequested = first == Stop
	if err := m.fire(first, nil); err != nil {
		return err
	}
	for m.State() != Idle {
		if err := m.next(&in); err != nil {
			return err
		}
	}
	return nil
}

// inputs are Run's stop signals; each is set to nil once it has fired.
type inputs struct {
	stop <-chan struct{}
	done <-chan struct{}
}

// next waits for one input and fires the trigger it stands for, if any.
func (m *Machine) next(in *inputs) error {
	var err error
	select {
	case ev := <-m.events:
		if ev.gen != m.scope.gen {
			m.log.Debug("stale event dropped", "trigger", ev.trigger.String(), "gen", ev.gen,
				"state", m.State().String(), "currentGen", m.scope.gen)
			return nil
		}
		err = m.fire(ev.trigger, ev.err)
	case <-in.stop:
		in.stop = nil
		err = m.shutDown()
	case <-in.done:
		in.done = nil
		m.log.Debug("context cancelled: stopping")
		err = m.shutDown()
	case <-m.wake:
		err = m.reconcile()
	case <-m.notices:
		if m.State() == AcquiringLock {
			m.noticeInAcquire = true
			return nil
		}
		err = m.fire(ReleaseNotice, nil)
	case <-m.endWake:
		err = m.fireWorkEnded()
	}
	if err == nil && m.noticeInAcquire && m.State() != AcquiringLock {
		m.noticeInAcquire = false
		if m.State() == WaitingToAcquireLock {
			m.log.Debug("replaying a release notice that came during the failed attempt")
			err = m.fire(ReleaseNotice, nil)
		}
	}
	return err
}

// runResident is Run for a Resident machine: it waits in idle until
// Contend, and returns once it is idle after Stop or ctx.
func (m *Machine) runResident(in *inputs) error {
	for !m.shutdown || m.State() != Idle {
		if err := m.next(in); err != nil {
			return err
		}
		if err := m.reconcile(); err != nil {
			return err
		}
	}
	return nil
}

// shutDown takes Stop or the end of Run's ctx: STOP, unless a Resident
// machine is idle already (it has nothing to clean up).
func (m *Machine) shutDown() error {
	m.shutdown = true
	if m.cfg.Resident && m.State() == Idle {
		return nil
	}
	return m.fireStop()
}

// reconcile moves a Resident machine towards what Contend and Leave asked
// for: out of idle to contend, back to idle (cleanup, release) to leave.
// A machine already on its way to idle (STOP fired) gets there first.
func (m *Machine) reconcile() error {
	if !m.cfg.Resident || m.shutdown {
		return nil
	}
	switch idle := m.State() == Idle; {
	case m.want.Load() && idle:
		m.stopRequested = false
		return m.fire(TryAcquireLock, nil)
	case !m.want.Load() && !idle && !m.stopRequested:
		return m.fireStop()
	}
	return nil
}

// Contend makes a Resident machine compete for the lock: from idle it
// fires TRY_ACQUIRE_LOCK, and it keeps competing (and leading) until
// Leave. Safe from any goroutine; never blocks.
func (m *Machine) Contend() { m.setWant(true) }

// Leave makes a Resident machine stop competing, or give its leadership
// up (STOP: stop the work, release the lock with the notice) and wait in
// idle. Safe from any goroutine; never blocks.
func (m *Machine) Leave() { m.setWant(false) }

func (m *Machine) setWant(contend bool) {
	m.want.Store(contend)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// fireStop fires STOP and remembers it, so that a leadership already on
// its way out after WORK_ENDED ends in idle rather than rejoining.
func (m *Machine) fireStop() error {
	m.stopRequested = true
	return m.fire(Stop, nil)
}

// fireWorkEnded fires WORK_ENDED for the work of the current leadership;
// the end of an earlier leadership's work is dropped.
func (m *Machine) fireWorkEnded() error {
	m.endMu.Lock()
	lead, cause := m.endLead, m.endErr
	m.endLead, m.endErr = 0, nil
	m.endMu.Unlock()
	if lead == 0 {
		return nil // already taken with an earlier wake-up
	}
	if lead != m.leadership {
		m.log.Debug("stale event dropped", "trigger", WorkEnded.String(), "leadership", lead,
			"currentLeadership", m.leadership)
		return nil
	}
	return m.fire(WorkEnded, cause)
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
// before Run makes Run clean up and return without acquiring.
func (m *Machine) Stop() {
	m.once.Do(func() { close(m.stop) })
}

// NotifyReleased tells the machine the lock was just released elsewhere,
// so a waiting machine tries at once instead of sleeping out its retry
// delay. Safe from any goroutine and never blocks: a notice is dropped if
// one is already pending. It acts in waiting_to_acquire_lock; one that
// comes during acquiring_lock is kept and acts if that attempt fails; in
// every other state it is ignored.
func (m *Machine) NotifyReleased() {
	select {
	case m.notices <- struct{}{}:
	default:
	}
}

// workEnded is the ended func handed to StartWork for leadership lead.
// It never blocks and may be called from any goroutine, StartWork's own
// included: it keeps the end of the latest leadership (an older one is
// stale anyway) and wakes Run.
func (m *Machine) workEnded(lead uint64, err error) {
	m.endMu.Lock()
	if lead >= m.endLead {
		m.endLead, m.endErr = lead, err
	}
	m.endMu.Unlock()
	select {
	case m.endWake <- struct{}{}:
	default:
	}
}

// State returns the current state; safe from any goroutine.
func (m *Machine) State() State {
	return State(m.state.Load())
}
