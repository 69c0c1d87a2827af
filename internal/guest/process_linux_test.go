//go:build linux

package guest

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Helpers for the tests that look at real processes.

// lockedBuffer is a bytes.Buffer that a command writes to while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds (true) or bound has passed (false).
func waitFor(bound time.Duration, cond func() bool) bool {
	end := time.Now().Add(bound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs g.Run in the background.
func start(g *Guest, ctx context.Context, deadline func() time.Time) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, nil, nil, deadline) }()
	return done
}

// await returns Run's error, failing the test if Run has not returned
// within settle: a kill that does not happen must fail, not hang on a
// sleep 300.
func await(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(settle):
		t.Fatalf("Run has not returned after %s", settle)
		return nil
	}
}

// settle bounds the waits for something a command or a process does on its
// own (start, write its pid): generous, as the machine is shared and
// -race slows every process start.
const settle = 20 * time.Second

// recordProcs returns the processes whose pids are on the first n lines
// of what lines returns, waiting up to settle for them, and makes sure
// the test leaves none of them running.
func recordProcs(t *testing.T, n int, lines func() string) []proc {
	t.Helper()
	var fields []string
	if !waitFor(settle, func() bool {
		fields = strings.Fields(lines())
		return len(fields) >= n
	}) {
		t.Fatalf("want %d pids, got %q", n, fields)
	}
	var procs []proc
	for _, f := range fields[:n] {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("not a pid: %q", f)
		}
		p, ok := readProc(pid)
		if !ok {
			t.Fatalf("process %d is already gone", pid)
		}
		procs = append(procs, p)
	}
	t.Cleanup(func() { killProcs(procs) })
	return procs
}

func fileLines(path string) func() string {
	return func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
}

// alive reports whether p still runs: the same process (pid and start
// time), not a zombie.
func alive(p proc) bool {
	q, ok := readProc(p.pid)
	return ok && q.start == p.start && q.state != 'Z'
}

func living(procs []proc) []int {
	var pids []int
	for _, p := range procs {
		if alive(p) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

func killProcs(procs []proc) {
	for _, p := range procs {
		if alive(p) {
			_ = unix.Kill(p.pid, syscall.SIGKILL)
		}
	}
}
