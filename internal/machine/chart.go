package machine

import (
	"context"
	"log/slog"

	"github.com/qmuntal/stateless"
)

// chart is the whole chart, read top to bottom: each state, what runs on
// its entry, and where each trigger leads. STOP leads to cleanup from
// every state but cleanup and releasing_lock (already stopping). Work that
// ends by itself (WORK_ENDED) takes the same way out, cleanup then
// releasing_lock, but rejoins the followers in waiting_to_acquire_lock
// instead of stopping in idle, unless a STOP came meanwhile. Triggers a
// state does not list, such as RELEASE_NOTICE outside
// waiting_to_acquire_lock, change nothing. The routine arrows are the
// steps of the two loops, a leader renewing and a follower retrying.
func (m *Machine) chart() chart {
	return chart{
		initial:    Idle,
		everywhere: []arrow{on(Stop, Cleanup)},
		states: []stateRule{
			{state: Idle, on: []arrow{
				on(TryAcquireLock, AcquiringLock),
			}},
			{state: AcquiringLock, entry: []entryAction{do(m.acquire)}, on: []arrow{
				on(LockAcquired, Working),
				on(AcquireFailed, WaitingToAcquireLock).routine(),
			}},
			{state: Working, entry: []entryAction{
				doOn(LockAcquired, m.startWork), // not on LOCK_RENEWED: the work keeps running
				do(m.armRenewTimer),
			}, on: []arrow{
				on(RenewTimer, RenewLock).routine(),
				on(WorkEnded, Cleanup),
			}},
			{state: RenewLock, entry: []entryAction{do(m.renew)}, on: []arrow{
				on(LockRenewed, Working).routine(),
				on(RenewFailed, PauseWork),
				on(WorkEnded, Cleanup),
			}},
			{state: PauseWork, entry: []entryAction{do(m.stopWork)}, on: []arrow{
				on(WorkStopped, WaitingToAcquireLock), // done or failed
				ignore(WorkEnded),                     // being stopped already
			}},
			{state: WaitingToAcquireLock, entry: []entryAction{do(m.armRetryTimer)}, on: []arrow{
				on(RetryTimer, AcquiringLock).routine(),
				on(ReleaseNotice, AcquiringLock),
			}},
			{state: Cleanup, entry: []entryAction{do(m.stopWork)}, on: []arrow{
				on(WorkStopped, ReleasingLock), // done or failed
				ignore(WorkEnded),
				ignore(Stop),
			}},
			{state: ReleasingLock, entry: []entryAction{do(m.release)}, on: []arrow{
				on(LockReleased, Idle).when(m.stopping), // done or failed
				on(LockReleased, WaitingToAcquireLock).when(m.rejoining),
				ignore(WorkEnded),
				ignore(Stop),
			}},
		},
	}
}

// Entry actions. They only start things (a Call's goroutine, a timer)
// and return, so Run's goroutine never blocks inside Fire. Their names are
// what the graph shows.

// acquire logs the article's "Trying to acquire lock": at INFO when the
// attempt is news (the first, or a release notice's), at DEBUG for a
// follower's routine retry.
func (m *Machine) acquire(ctx context.Context, _ ...any) error {
	level := slog.LevelInfo
	if m.routineStep {
		level = slog.LevelDebug
	}
	m.log.Log(ctx, level, "Trying to acquire lock")
	m.invoke(m.lane.Acquire(), LockAcquired, AcquireFailed)
	return nil
}

func (m *Machine) startWork(context.Context, ...any) error {
	m.log.Info("Lock acquired. Starting work")
	m.lane.StartWork()
	return nil
}

func (m *Machine) armRenewTimer(context.Context, ...any) error {
	m.arm(m.lane.RenewIn(), RenewTimer)
	return nil
}

func (m *Machine) renew(context.Context, ...any) error {
	m.log.Debug("Renewing lock") // every renewal: see Routine
	m.invoke(m.lane.Renew(), LockRenewed, RenewFailed)
	return nil
}

func (m *Machine) stopWork(context.Context, ...any) error {
	m.invoke(m.lane.StopWork(), WorkStopped, WorkStopped)
	return nil
}

func (m *Machine) armRetryTimer(context.Context, ...any) error {
	d := m.lane.BeginWait()
	m.log.Debug("retry timer armed", "retryInMs", d.Milliseconds())
	m.arm(d, RetryTimer)
	return nil
}

func (m *Machine) release(context.Context, ...any) error {
	m.log.Info("Releasing lock")
	m.invoke(m.lane.Release(), LockReleased, LockReleased)
	return nil
}

// Guards of releasing_lock's way out: a STOP (or the cancelled context)
// ends in idle; a leadership given up because its work ended rejoins the
// followers.

func (m *Machine) stopping(context.Context, ...any) bool  { return m.stopRequested }
func (m *Machine) rejoining(context.Context, ...any) bool { return !m.stopRequested }

// onTransitioning runs between the old state's exit and the new state's
// entry: the one place every transition passes, so it logs it (once: at
// DEBUG for a routine step of a loop, unless it failed with a fault the
// lane does not call routine, at INFO otherwise) and swaps the scope.
func (m *Machine) onTransitioning(ctx context.Context, tr stateless.Transition) {
	attrs := []any{
		"from", tr.Source.(State).String(),
		"to", tr.Destination.(State).String(),
		"trigger", tr.Trigger.(Trigger).String(),
	}
	if m.cause != nil {
		attrs = append(attrs, "err", m.cause.Error())
	}
	m.routineStep = Routine(tr.Source.(State), tr.Trigger.(Trigger))
	level := slog.LevelInfo
	if m.routineStep && (m.cause == nil || m.lane.Routine(m.cause)) {
		level = slog.LevelDebug
	}
	m.log.Log(ctx, level, "transition", attrs...)
	m.closeScope()
	m.scope = m.openScope(m.scope.gen + 1)
}

func (m *Machine) onTransitioned(_ context.Context, tr stateless.Transition) {
	m.lane.Transitioned(tr.Source.(State), tr.Destination.(State), tr.Trigger.(Trigger))
}

// onUnhandled keeps a stray trigger from erroring the machine (stateless
// would return an error and leave the rest of its queue unprocessed).
func (m *Machine) onUnhandled(_ context.Context, state stateless.State, trigger stateless.Trigger, _ []string) error {
	m.log.Debug("trigger ignored", "state", state.(State).String(), "trigger", trigger.(Trigger).String())
	return nil
}
