//go:build unix

package daemon

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processGone reports that no live process of this host has pid: signal
// 0 finds none (EPERM means one runs, another user's), or Linux's /proc
// says it is a zombie, dead but not yet reaped by its parent (a replica
// killed and started again at once).
func processGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold any byte, ')' included.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}
