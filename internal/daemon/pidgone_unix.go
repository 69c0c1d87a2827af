//go:build unix

package daemon

import (
	"errors"
	"syscall"
)

// processGone reports that no process of this host has pid (signal 0
// finds none; EPERM means one runs, another user's).
func processGone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
