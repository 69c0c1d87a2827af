package machine

import "testing"

func TestNames(t *testing.T) {
	states := map[State]string{
		Idle: "idle", AcquiringLock: "acquiring_lock", Working: "working", RenewLock: "renew_lock",
		PauseWork: "pause_work", WaitingToAcquireLock: "waiting_to_acquire_lock",
		Cleanup: "cleanup", ReleasingLock: "releasing_lock", State(99): "State(99)",
	}
	for s, want := range states {
		if got := s.String(); got != want {
			t.Errorf("State %d = %q, want %q", int(s), got, want)
		}
	}
	if len(States()) != 8 {
		t.Errorf("States() has %d states, want 8", len(States()))
	}
	triggers := map[Trigger]string{
		TryAcquireLock: "TRY_ACQUIRE_LOCK", LockAcquired: "LOCK_ACQUIRED", AcquireFailed: "ACQUIRE_FAILED",
		RenewTimer: "RENEW_TIMER", LockRenewed: "LOCK_RENEWED", RenewFailed: "RENEW_FAILED",
		WorkStopped: "WORK_STOPPED", RetryTimer: "RETRY_TIMER", ReleaseNotice: "RELEASE_NOTICE",
		Stop: "STOP", LockReleased: "LOCK_RELEASED", WorkEnded: "WORK_ENDED", Trigger(-1): "Trigger(-1)",
	}
	for tr, want := range triggers {
		if got := tr.String(); got != want {
			t.Errorf("Trigger %d = %q, want %q", int(tr), got, want)
		}
	}
}
