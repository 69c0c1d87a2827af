//go:build unix && !linux

package fleet

import (
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group. Without Pdeathsig,
// only Close and the context reap children here.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited returns at once here: Wait reaps, and a signal racing with
// it may miss.
func waitExited(int) {}

// WaitStopped cannot look at threads here (no /proc): it returns true
// after a short grace, which is the best a portable caller can do.
func WaitStopped(int, time.Duration) bool {
	time.Sleep(50 * time.Millisecond)
	return true
}
