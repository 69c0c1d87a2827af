//go:build !linux

package jobs

import (
	"os"
	"os/exec"
)

// setGroup, off Linux, signals only the child: SIGTERM (os.Interrupt where
// that is all there is) on cancel, and WaitDelay's kill after Grace.
func setGroup(cmd *exec.Cmd) func() {
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	return func() {}
}
