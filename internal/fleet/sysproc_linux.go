package fleet

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group and has the kernel
// kill it when the thread that started it (and so, in Go, the supervisor)
// dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until the child has exited but leaves it unreaped, so
// its PID (and process group ID) stays taken until reap says it is gone.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// WaitStopped polls until every thread of pid is stopped (state T), pid is
// gone, or limit passes, and reports whether it is stopped (or gone).
// kill(2) with SIGSTOP returns before every thread has stopped, so a thread
// can still send a reply right after it; tests that assert on a frozen
// process wait here first.
func WaitStopped(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return true // gone: nothing left to run
		}
		all := true
		for _, t := range tasks {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
			if err != nil {
				continue
			}
			// The state follows the parenthesised command name.
			if i := strings.LastIndexByte(string(st), ')'); i < 0 || i+2 >= len(st) || (st[i+2] != 'T' && st[i+2] != 't') {
				all = false
				break
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
