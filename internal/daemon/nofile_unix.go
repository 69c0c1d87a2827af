//go:build unix

package daemon

import "syscall"

// nofileLimit is the process's descriptor limit (RLIMIT_NOFILE, as the Go
// runtime raised it at start), or 0 when unknown.
func nofileLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return r.Cur
}
