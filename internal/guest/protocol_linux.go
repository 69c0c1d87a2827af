//go:build linux

package guest

import (
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What the daemon and the supervisor say to each other.
//
// The supervisor is started as
//
//	<Supervisor> __lockworker-guest-supervisor <daemon pid> <grace> <deadline> <path> <argv...>
//
// (grace as time.Duration prints it)
// with fd 3, the report pipe (supervisor to daemon: one JSON report, written
// when the whole tree is gone), and fd 4, the control pipe (daemon to
// supervisor: one message per line, "term", "kill" or "deadline <ns>").
// EOF on the control pipe means the daemon is gone. A deadline is an
// absolute CLOCK_MONOTONIC time in nanoseconds, the clock of Go's monotonic
// readings, shared by every process on the host; "-" is none.
const (
	supervisorArg = "__lockworker-guest-supervisor"
	reportFD      = 3
	controlFD     = 4

	msgTerm     = "term"
	msgKill     = "kill"
	msgDeadline = "deadline "
)

// report is how the command ended, as the supervisor saw it.
type report struct {
	// Code is the command's exit code, or -1 when a signal ended it or it
	// never started.
	Code int `json:"code"`
	// Signal is what ended it, if a signal did.
	Signal int `json:"signal,omitempty"`
	// StartError says why the command could not be started.
	StartError string `json:"startError,omitempty"`
	// Killed is set when the supervisor killed the command on its own:
	// "deadline" (the lease deadline passed) or "parent" (the daemon died).
	Killed string `json:"killed,omitempty"`
}

func (r report) exitCode() int {
	switch {
	case r.StartError != "":
		return 127
	case r.Code < 0:
		return 128 + r.Signal
	}
	return r.Code
}

func (r report) outcome(stop stopState) outcome {
	o := outcome{code: r.Code, signal: syscall.Signal(r.Signal), startErr: r.StartError, stopped: stop.stopped, killed: stop.killed}
	if o.killed == "" && r.Killed == "deadline" {
		o.killed = killedAtDeadline
	}
	return o
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	return ts.Nano()
}

// formatDeadline turns d, a time with a monotonic reading, into the
// supervisor's form.
func formatDeadline(d time.Time) string {
	if d.IsZero() {
		return "-"
	}
	return strconv.FormatInt(monoNow()+int64(time.Until(d)), 10)
}

// parseDeadline reads formatDeadline's form: 0 for none.
func parseDeadline(s string) (int64, error) {
	if s == "-" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
