package machine

import "fmt"

// State is a state of the chart. Its String is the name operators see in
// logs, metrics and /status, kept exactly as in the original chart.
type State int

// The chart's states.
const (
	Idle State = iota
	AcquiringLock
	Working
	RenewLock
	PauseWork
	WaitingToAcquireLock
	Cleanup
	ReleasingLock
)

var stateNames = [...]string{
	Idle:                 "idle",
	AcquiringLock:        "acquiring_lock",
	Working:              "working",
	RenewLock:            "renew_lock",
	PauseWork:            "pause_work",
	WaitingToAcquireLock: "waiting_to_acquire_lock",
	Cleanup:              "cleanup",
	ReleasingLock:        "releasing_lock",
}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// States lists every state in chart order, for metrics that need the full
// set up front.
func States() []State {
	out := make([]State, len(stateNames))
	for i := range out {
		out[i] = State(i)
	}
	return out
}

// Trigger is an event that may move the chart.
type Trigger int

// The chart's triggers.
const (
	TryAcquireLock Trigger = iota
	LockAcquired
	AcquireFailed
	RenewTimer
	LockRenewed
	RenewFailed
	WorkStopped
	RetryTimer
	ReleaseNotice
	Stop
	LockReleased
	WorkEnded
)

var triggerNames = [...]string{
	TryAcquireLock: "TRY_ACQUIRE_LOCK",
	LockAcquired:   "LOCK_ACQUIRED",
	AcquireFailed:  "ACQUIRE_FAILED",
	RenewTimer:     "RENEW_TIMER",
	LockRenewed:    "LOCK_RENEWED",
	RenewFailed:    "RENEW_FAILED",
	WorkStopped:    "WORK_STOPPED",
	RetryTimer:     "RETRY_TIMER",
	ReleaseNotice:  "RELEASE_NOTICE",
	Stop:           "STOP",
	LockReleased:   "LOCK_RELEASED",
	WorkEnded:      "WORK_ENDED",
}

func (t Trigger) String() string {
	if t >= 0 && int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return fmt.Sprintf("Trigger(%d)", int(t))
}

// Steady is s with the chart's two loops folded: renew_lock counts as
// working and acquiring_lock as waiting_to_acquire_lock, so a status
// read from it does not flicker with every renewal or retry.
func (s State) Steady() State {
	switch s {
	case RenewLock:
		return Working
	case AcquiringLock:
		return WaitingToAcquireLock
	}
	return s
}
