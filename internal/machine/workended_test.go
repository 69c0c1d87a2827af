package machine

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestWorkEndedGivesUpLeadership: work that ends by itself while the lease
// is valid leads through cleanup (stop the work) and releasing_lock
// (release the lock) back to waiting_to_acquire_lock, and the next
// acquisition starts a new work.
func TestWorkEndedGivesUpLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking()
		h.workEnds(1)
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.wantState(ReleasingLock)
		h.next(h.release, "Release").reply(nil)
		h.wantState(WaitingToAcquireLock)
		time.Sleep(retryDelay)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		if got := h.startedCount(); got != 2 {
			t.Errorf("StartWork called %d times, want 2", got)
		}
		h.m.Stop()
		h.stopThroughCleanup()

		want := []step{
			{Idle, AcquiringLock, TryAcquireLock},
			{AcquiringLock, Working, LockAcquired},
			{Working, Cleanup, WorkEnded},
			{Cleanup, ReleasingLock, WorkStopped},
			{ReleasingLock, WaitingToAcquireLock, LockReleased},
			{WaitingToAcquireLock, AcquiringLock, RetryTimer},
			{AcquiringLock, Working, LockAcquired},
			{Working, Cleanup, Stop},
			{Cleanup, ReleasingLock, WorkStopped},
			{ReleasingLock, Idle, LockReleased},
		}
		if got := h.steps(); !slices.Equal(got, want) {
			t.Errorf("transitions:\n got %v\nwant %v", got, want)
		}
		if !strings.Contains(h.logs.String(), `from=working to=cleanup trigger=WORK_ENDED err="fake failure"`) {
			t.Errorf("why the work ended is not on its transition line:\n%s", h.logs.String())
		}
	})
}

// TestWorkEndedDuringRenew: the renew in flight is cancelled, and StopWork
// starts only after it returned.
func TestWorkEndedDuringRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		renew := h.toRenew()
		h.workEnds(1)
		h.wantState(Cleanup)
		if renew.ctx.Err() == nil {
			t.Error("the renew's context was not cancelled when the work ended")
		}
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(WaitingToAcquireLock)
	})
}

// TestStopWhileGivingUp: a STOP that comes while a leadership is given up
// ends in idle, whichever of the two states it comes in.
func TestStopWhileGivingUp(t *testing.T) {
	for _, at := range []State{Cleanup, ReleasingLock} {
		t.Run(at.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.toWorking()
				h.workEnds(1)
				h.wantState(Cleanup)
				if at == ReleasingLock {
					h.next(h.stopWork, "StopWork").reply(nil)
					h.wantState(ReleasingLock)
				}
				h.m.Stop()
				h.wantState(at)
				if at == Cleanup {
					h.next(h.stopWork, "StopWork").reply(nil)
				}
				h.next(h.release, "Release").reply(nil)
				h.finish()
				h.noCall(h.acquire, "Acquire after STOP")
			})
		})
	}
}

// TestStaleWorkEnded: the end of an earlier leadership's work, reported
// late, does not move the current one (the lane answers it with no
// move); in pause_work, where the work is being stopped anyway, the
// current one's WORK_ENDED changes nothing either.
func TestStaleWorkEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toPause().reply(nil) // leadership 1 lost its lease
		h.wantState(WaitingToAcquireLock)
		time.Sleep(retryDelay)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working) // leadership 2

		h.workEnds(1)
		h.wantState(Working)
		h.noCall(h.stopWork, "StopWork for a stale end")

		time.Sleep(renewInterval)
		h.next(h.renew, "Renew").reply(errFake)
		h.wantState(PauseWork)
		stop := h.next(h.stopWork, "StopWork in pause_work")
		h.workEnds(2)
		h.wantState(PauseWork)
		stop.reply(nil)
		h.wantState(WaitingToAcquireLock)
	})
}

// TestWorkEndedInsideStartWork: Post never blocks, even when the work
// fails before StartWork returns (on Run's own goroutine), or after Run
// returned.
func TestWorkEndedInsideStartWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(h *harness) {
			h.lane.startWork = func(lead int) { h.m.Post(workEnded{lead: lead}) }
		})
		h.toAcquiring().reply(nil)
		h.wantState(Cleanup)
		h.m.Stop()
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.finish()
		h.workEnds(1) // Run is gone: must return at once
	})
}
