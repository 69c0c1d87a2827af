package machine

import (
	"testing"
	"testing/synctest"
	"time"
)

func resident(_ *harness, cfg *Config) { cfg.Resident = true }

// A Resident machine waits in idle for Contend, gives its leadership up
// on Leave (stop the work, release) and waits in idle again, and can be
// sent to contend again: the chart of one partition.
func TestResidentContendAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, resident)
		h.start(t.Context())
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire before Contend")

		h.m.Contend()
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)

		h.m.Leave()
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.wantState(ReleasingLock)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire after Leave")

		h.m.Contend()
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire again").reply(errFake)
		h.wantState(WaitingToAcquireLock)
		h.m.Leave() // a follower stops competing: nothing to release but the way out
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		if n := h.startedCount(); n != 1 {
			t.Fatalf("%d works started, want 1", n)
		}
	})
}

// Contend while the machine is on its way to idle takes it back to
// acquiring_lock once it gets there; Leave and Contend in a row cancel
// out.
func TestResidentContendWhileLeaving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, resident)
		h.start(t.Context())
		h.m.Contend()
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.m.Leave()
		h.wantState(Cleanup)
		h.m.Contend()
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire after the way out").reply(nil)
		h.wantState(Working)
	})
}

// Leave after the work ended by itself (cleanup on the way back to the
// followers) ends in idle instead.
func TestResidentLeaveAfterWorkEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, resident)
		h.start(t.Context())
		h.m.Contend()
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.workEnds(1, errFake)
		h.wantState(Cleanup)
		h.m.Leave()
		h.next(h.stopWork, "StopWork").reply(nil)
		h.next(h.release, "Release").reply(nil)
		h.wantState(Idle)
		time.Sleep(time.Hour)
		h.noCall(h.acquire, "Acquire after Leave")
	})
}

// Stop ends Run at once from idle (nothing to clean up), and through
// cleanup and release from a leadership; Contend after Stop does nothing.
func TestResidentStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, resident)
		h.start(t.Context())
		h.wantState(Idle)
		h.m.Stop()
		h.finish()
		h.noCall(h.stopWork, "StopWork")
		h.noCall(h.release, "Release")
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, resident)
		h.start(t.Context())
		h.m.Contend()
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		h.m.Stop()
		h.m.Contend()
		h.stopThroughCleanup()
	})
}
