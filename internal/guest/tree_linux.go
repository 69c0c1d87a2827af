//go:build linux

package guest

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// proc is one process as /proc/<pid>/stat shows it.
type proc struct {
	pid   int
	ppid  int
	state byte   // R, S, D, Z, T, ...
	start uint64 // start time in clock ticks since boot: with pid, an identity
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "" {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64) // field 22 of stat
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, state: f[0][0], start: start}, true
}

// descendants lists every process whose parent chain leads to root.
func descendants(root int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// signalDescendants signals every descendant of self (the supervisor).
// A child's pid is safe to signal: only its parent can reap it, and that is
// the caller. A deeper descendant may have been reaped by its own parent and
// its pid reused since the scan, so it is signalled through a pidfd, after
// checking that the pidfd names the process the scan saw.
func signalDescendants(self int, sig syscall.Signal) {
	for _, p := range descendants(self) {
		if p.ppid == self {
			_ = unix.Kill(p.pid, sig)
			continue
		}
		fd, err := unix.PidfdOpen(p.pid, 0)
		if err != nil {
			// Gone, or a kernel before 5.3. Either way, when its parent
			// dies it is reparented to self and reached as a child.
			continue
		}
		if now, ok := readProc(p.pid); ok && now.start == p.start {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
}
