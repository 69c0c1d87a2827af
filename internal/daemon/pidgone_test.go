//go:build linux

package daemon

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// TestProcessGone: a running process is not gone, this one neither; a
// killed one is, before its parent reaps it (a zombie) and after.
func TestProcessGone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process (skipped with -short)")
	}
	if processGone(os.Getpid()) {
		t.Fatal("this process is gone")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if processGone(pid) {
		t.Fatal("a running child is gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the killed child, not reaped yet, gone", func() bool { return processGone(pid) })
	_ = cmd.Wait()
	if !processGone(pid) {
		t.Fatal("a reaped child is not gone")
	}
}
