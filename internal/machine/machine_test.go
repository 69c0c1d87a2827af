package machine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestChartWalk drives every transition of the chart once, in one run, and
// checks the transitions reported, the article's log lines, and that each
// transition is logged exactly once.
func TestChartWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toAcquiring().reply(errFake) // ACQUIRE_FAILED
		h.wantState(WaitingToAcquireLock)
		time.Sleep(retryDelay) // RETRY_TIMER
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire").reply(nil) // LOCK_ACQUIRED
		h.wantState(Working)
		time.Sleep(renewInterval) // RENEW_TIMER
		h.wantState(RenewLock)
		h.next(h.renew, "Renew").reply(nil) // LOCK_RENEWED
		h.wantState(Working)
		time.Sleep(renewInterval)
		h.next(h.renew, "Renew").reply(errFake) // RENEW_FAILED
		h.wantState(PauseWork)
		h.next(h.stopWork, "StopWork").reply(nil) // WORK_STOPPED (done)
		h.wantState(WaitingToAcquireLock)
		h.notify() // RELEASE_NOTICE
		h.wantState(AcquiringLock)
		h.next(h.acquire, "Acquire").reply(nil)
		time.Sleep(renewInterval)
		h.next(h.renew, "Renew").reply(errFake)
		h.next(h.stopWork, "StopWork").reply(errFake) // WORK_STOPPED (failed)
		h.wantState(WaitingToAcquireLock)
		h.m.Stop() // STOP
		h.stopThroughCleanup()

		want := []step{
			{Idle, AcquiringLock, TryAcquireLock},
			{AcquiringLock, WaitingToAcquireLock, AcquireFailed},
			{WaitingToAcquireLock, AcquiringLock, RetryTimer},
			{AcquiringLock, Working, LockAcquired},
			{Working, RenewLock, RenewTimer},
			{RenewLock, Working, LockRenewed},
			{Working, RenewLock, RenewTimer},
			{RenewLock, PauseWork, RenewFailed},
			{PauseWork, WaitingToAcquireLock, WorkStopped},
			{WaitingToAcquireLock, AcquiringLock, ReleaseNotice},
			{AcquiringLock, Working, LockAcquired},
			{Working, RenewLock, RenewTimer},
			{RenewLock, PauseWork, RenewFailed},
			{PauseWork, WaitingToAcquireLock, WorkStopped},
			{WaitingToAcquireLock, Cleanup, Stop},
			{Cleanup, ReleasingLock, WorkStopped},
			{ReleasingLock, Idle, LockReleased},
		}
		if got := h.steps(); !slices.Equal(got, want) {
			t.Errorf("transitions:\n got %v\nwant %v", got, want)
		}
		if got := h.startedCount(); got != 2 {
			t.Errorf("StartWork called %d times, want 2 (once per acquisition)", got)
		}

		logs := h.logs.String()
		if got := h.logCount("msg=transition "); got != len(want) {
			t.Errorf("%d transition log lines, want %d:\n%s", got, len(want), logs)
		}
		for _, s := range want {
			line := "from=" + s.from.String() + " to=" + s.to.String() + " trigger=" + s.trigger.String()
			if !strings.Contains(logs, line) {
				t.Errorf("no log line with %q", line)
			}
		}
		if !strings.Contains(logs, `trigger=RENEW_FAILED err="fake failure"`) {
			t.Errorf("the failed renew's error is not on its transition line:\n%s", logs)
		}
		for msg, n := range map[string]int{
			`level=INFO msg="Trying to acquire lock"`:  2, // the first, and the notice's
			`level=DEBUG msg="Trying to acquire lock"`: 1, // the routine retry
			`msg="Lock acquired. Starting work"`:       2,
			`msg="Renewing lock"`:                      3,
			`msg="Releasing lock"`:                     1,
		} {
			if got := h.logCount(msg); got != n {
				t.Errorf("%s logged %d times, want %d", msg, got, n)
			}
		}
	})
}

// TestFailedCleanupStillReleases: WORK_STOPPED and LOCK_RELEASED move on
// whether the callback succeeded or not.
func TestFailedCleanupStillReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking()
		h.m.Stop()
		h.wantState(Cleanup)
		h.next(h.stopWork, "StopWork").reply(errFake)
		h.wantState(ReleasingLock)
		h.next(h.release, "Release").reply(errFake)
		h.finish()
	})
}

// TestStopInEveryState: STOP from any state but idle ends in idle through
// cleanup (which calls StopWork) and releasing_lock (which calls Release),
// and Run returns nil. In cleanup and releasing_lock a second STOP (here
// the context's cancellation) is ignored. (From idle, Stop ends Run at
// once: TestStopFromIdle.)
func TestStopInEveryState(t *testing.T) {
	tests := []struct {
		state State
		// drive leaves the machine in state and returns its pending
		// callback, if any, which the stop must cancel.
		drive func(h *harness) *call
		// stop sends the STOP under test.
		stop func(h *harness)
	}{
		{AcquiringLock, func(h *harness) *call { c := h.toAcquiring(); return &c }, nil},
		{Working, func(h *harness) *call { h.toWorking(); return nil }, nil},
		{RenewLock, func(h *harness) *call { c := h.toRenew(); return &c }, nil},
		{PauseWork, func(h *harness) *call { c := h.toPause(); return &c }, nil},
		{WaitingToAcquireLock, func(h *harness) *call { h.toWaiting(); return nil }, nil},
		{Cleanup, func(h *harness) *call {
			h.toWorking()
			h.m.Stop()
			h.wantState(Cleanup)
			return nil
		}, func(h *harness) { h.cancel() }},
		{ReleasingLock, func(h *harness) *call {
			h.toWorking()
			h.m.Stop()
			h.next(h.stopWork, "StopWork").reply(nil)
			h.wantState(ReleasingLock)
			return nil
		}, func(h *harness) { h.cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.state.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				pending := tt.drive(h)
				h.wantState(tt.state)
				stop := tt.stop
				if stop == nil {
					stop = func(h *harness) { h.m.Stop() }
				}
				stop(h)
				synctest.Wait()
				if pending != nil && pending.ctx.Err() == nil {
					t.Errorf("the %v callback's context was not cancelled by STOP", tt.state)
				}
				switch tt.state {
				case Cleanup:
					h.stopThroughCleanup()
				case ReleasingLock:
					h.wantState(ReleasingLock)
					h.next(h.release, "Release").reply(nil)
					h.finish()
				default:
					h.stopThroughCleanup()
				}
				steps := h.steps()
				last := steps[len(steps)-1]
				if last != (step{ReleasingLock, Idle, LockReleased}) {
					t.Errorf("last transition = %v", last)
				}
				if n := h.logCount("trigger=STOP"); n != 1 {
					t.Errorf("%d STOP transitions logged, want 1", n)
				}
			})
		})
	}
}

// TestStartWorkOnceAcrossRenewals: working -> renew_lock -> working keeps
// the work running instead of restarting it.
func TestStartWorkOnceAcrossRenewals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking()
		for range 20 {
			time.Sleep(renewInterval)
			h.next(h.renew, "Renew").reply(nil)
			h.wantState(Working)
		}
		if got := h.startedCount(); got != 1 {
			t.Errorf("StartWork called %d times across 20 renewals, want 1", got)
		}
		h.m.Stop()
		h.stopThroughCleanup()
	})
}

// TestStaleAcquireAfterStop: an Acquire that ignores its context and
// succeeds after STOP must not move the machine or start work; its result
// is discarded (a real lane releases the lease it won), and cleanup's
// StopWork waits until that has happened.
func TestStaleAcquireAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(h *harness) {
			h.lane.acquireCall = func(ctx context.Context) Result {
				c := call{ctx: ctx, result: make(chan error, 1)}
				h.acquire <- c
				return fakeResult{l: h.lane, err: <-c.result} // deaf to ctx, like a slow network call
			}
		})
		c := h.toAcquiring()
		h.m.Stop()
		h.wantState(Cleanup)
		if c.ctx.Err() == nil {
			t.Error("Acquire's context was not cancelled when acquiring_lock was left")
		}
		h.noCall(h.stopWork, "StopWork before the stale Acquire returned")

		c.reply(nil) // "acquired", too late
		h.wantState(Cleanup)
		stop := h.next(h.stopWork, "StopWork after the stale Acquire returned")
		if got := h.lane.discarded; got != 1 {
			t.Errorf("%d stale results discarded before StopWork started, want 1", got)
		}
		if got := h.startedCount(); got != 0 {
			t.Errorf("StartWork called %d times after a stale acquire", got)
		}
		stop.reply(nil)
		h.wantState(ReleasingLock)
		h.next(h.release, "Release").reply(nil)
		h.finish()
		if h.logCount("stale event dropped") == 0 {
			t.Errorf("the stale result was not logged as dropped:\n%s", h.logs.String())
		}
	})
}

// TestLateTimerDropped: a RENEW_TIMER from an earlier visit to working
// (Timer.Stop lost the race with its function) must not renew now.
// Generations count state entries: idle 0, acquiring_lock 1, working 2.
func TestLateTimerDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking() // generation 2
		time.Sleep(renewInterval)
		h.next(h.renew, "Renew").reply(nil)
		h.wantState(Working) // generation 4
		renewedAt := time.Now()

		h.m.events <- event{trigger: RenewTimer, gen: 2}
		h.wantState(Working)
		h.noCall(h.renew, "Renew after a late timer")
		if h.logCount("stale event dropped") != 1 {
			t.Errorf("the late timer was not logged as dropped:\n%s", h.logs.String())
		}

		// The current timer still fires on schedule.
		time.Sleep(renewInterval)
		h.next(h.renew, "Renew").reply(nil)
		if got := time.Since(renewedAt); got != renewInterval {
			t.Errorf("renewed after %v, want %v", got, renewInterval)
		}
		h.m.Stop()
		h.stopThroughCleanup()
	})
}

// TestReleaseNotice: a notice cuts the wait short in
// waiting_to_acquire_lock and changes nothing anywhere else.
func TestReleaseNotice(t *testing.T) {
	t.Run("waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t)
			h.toWaiting()
			before := time.Now()
			h.notify()
			h.wantState(AcquiringLock)
			h.next(h.acquire, "Acquire")
			if waited := time.Since(before); waited != 0 {
				t.Errorf("retried after %v, want at once", waited)
			}
		})
	})
	// A notice that comes while an attempt is in flight, which then finds
	// the lock held (it reached Redis just before the release), is not
	// lost: the machine retries at once instead of sleeping out the delay.
	t.Run("during a failing acquire", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t)
			c := h.toAcquiring()
			before := time.Now()
			h.notify()
			synctest.Wait()
			c.reply(errors.New("held"))
			h.next(h.acquire, "Acquire")
			if waited := time.Since(before); waited != 0 {
				t.Errorf("retried after %v, want at once", waited)
			}
		})
	})
	t.Run("elsewhere", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t)
			c := h.toAcquiring()
			h.notify()
			h.wantState(AcquiringLock)
			h.noCall(h.acquire, "a second Acquire")
			c.reply(nil)
			h.wantState(Working)
			for range 3 { // never blocks, even with a notice pending
				h.notify()
			}
			h.wantState(Working)
			h.noCall(h.renew, "Renew")
			if got := h.startedCount(); got != 1 {
				t.Errorf("StartWork called %d times", got)
			}
			if h.logCount("msg=\"trigger ignored\" state=working trigger=RELEASE_NOTICE") == 0 {
				t.Errorf("ignored notice not logged at debug:\n%s", h.logs.String())
			}
		})
	})
}

// TestCallbackContexts: a callback's context ends when its state is left,
// and cancelling Run's context reaches neither cleanup nor release, which
// still see its values.
func TestCallbackContexts(t *testing.T) {
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ctx := context.WithValue(t.Context(), key{}, "v")
		h.start(ctx)
		acq := h.next(h.acquire, "Acquire")
		acq.reply(nil)
		h.wantState(Working)
		if acq.ctx.Err() == nil {
			t.Error("Acquire's context still live after acquiring_lock was left")
		}
		time.Sleep(renewInterval)
		renew := h.next(h.renew, "Renew")
		if renew.ctx.Err() != nil {
			t.Fatal("Renew's context cancelled while renew_lock is current")
		}
		if renew.ctx.Value(key{}) != "v" {
			t.Error("Renew's context lost Run's values")
		}

		h.cancel() // acts as STOP
		h.wantState(Cleanup)
		if !errors.Is(renew.ctx.Err(), context.Canceled) {
			t.Errorf("Renew's context err = %v, want canceled", renew.ctx.Err())
		}
		stop := h.next(h.stopWork, "StopWork")
		if stop.ctx.Err() != nil || stop.ctx.Value(key{}) != "v" {
			t.Errorf("cleanup context: err %v, value %v; want live and carrying Run's values", stop.ctx.Err(), stop.ctx.Value(key{}))
		}
		stop.reply(nil)
		rel := h.next(h.release, "Release")
		if rel.ctx.Err() != nil {
			t.Errorf("Release's context err = %v, want live after Run's context was cancelled", rel.ctx.Err())
		}
		rel.reply(nil)
		h.finish()
	})
}

// TestContextCancelActsAsStop: the daemon's signal context is its STOP.
func TestContextCancelActsAsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking()
		h.cancel()
		h.stopThroughCleanup()
		if got := h.steps()[2]; got != (step{Working, Cleanup, Stop}) {
			t.Errorf("transition after cancel = %v, want working -> cleanup on STOP", got)
		}
	})
}

func TestRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.toWorking()
		if err := h.m.Run(t.Context()); !errors.Is(err, ErrRunTwice) {
			t.Errorf("second Run = %v, want ErrRunTwice", err)
		}
		h.m.Stop()
		h.m.Stop() // idempotent
		h.stopThroughCleanup()
		h.m.Stop() // after Run returned: nothing to do
		if err := h.m.Run(t.Context()); !errors.Is(err, ErrRunTwice) {
			t.Errorf("Run after Run = %v, want ErrRunTwice", err)
		}
	})
}
