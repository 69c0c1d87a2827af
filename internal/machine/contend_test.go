package machine

import (
	"testing"
	"testing/synctest"
	"time"
)

// idleLane starts the fake lane not contending, as a lane waits for its
// partition's plan.
func idleLane(h *harness) { h.lane.contend = false }

func (h *harness) contend(want bool) { h.m.Post(contending{want: want}) }

// A lane that does not contend waits in idle; one that contends leaves
// it, and gives its leadership up when it stops contending (stop the
// work, release), back to idle; it can contend again.
func TestContendAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, idleLane)
		h.start(t.Context())
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire before the lane contends")

		h.contend(true)
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)

		h.contend(false)
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.wantState(ReleasingLock)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire after the lane stopped contending")

		h.contend(true)
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire again").reply(errFake)
		h.wantState(WaitingToAcquireLock)
		h.contend(false) // a follower stops competing: nothing to release but the way out
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		if n := h.startedCount(); n != 1 {
			t.Fatalf("%d works started, want 1", n)
		}
	})
}

// Contending again while the chart is on its way to idle takes it back to
// acquiring_lock once it gets there.
func TestContendWhileLeaving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, idleLane)
		h.start(t.Context())
		h.contend(true)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.contend(false)
		h.wantState(Cleanup)
		h.contend(true)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire after the way out").reply(nil)
		h.wantState(Working)
	})
}

// A lane that stops contending after its work ended by itself (cleanup on
// the way back to the followers) ends in idle instead.
func TestStopContendingAfterWorkEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, idleLane)
		h.start(t.Context())
		h.contend(true)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.workEnds(1)
		h.wantState(Cleanup)
		h.contend(false)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire after the lane stopped contending")
	})
}

// TestStopFromIdle: Stop ends Run at once from idle (nothing to clean
// up), before Run as after it started; contending after Stop does
// nothing.
func TestStopFromIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, idleLane)
		h.start(t.Context())
		h.wantState(Idle)
		h.m.Stop()
		h.finish()
		h.noCall(h.stopWork, "StopWork")
		h.noCall(h.release, "Release")
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t) // contends from the start
		h.m.Stop()
		h.start(t.Context())
		h.finish()
		h.noCall(h.acquire, "Acquire after Stop")
		if steps := h.steps(); len(steps) != 0 {
			t.Errorf("transitions after a Stop before Run: %v, want none", steps)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, idleLane)
		h.start(t.Context())
		h.contend(true)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.m.Stop()
		h.contend(true)
		h.stopThroughCleanup()
	})
}
