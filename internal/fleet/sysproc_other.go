//go:build unix && !linux

package fleet

import "syscall"

// sysProcAttr puts the child in its own process group. Without Pdeathsig,
// only Close and the context reap children here.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited returns at once here: Wait reaps, and a signal racing with
// it may miss.
func waitExited(int) {}
