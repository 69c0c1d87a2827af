package jobs

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup puts the child in its own process group, has the kernel kill it
// if the daemon dies (so no orphan races the next leader on the same job),
// and makes cancellation send SIGTERM to the whole group. It returns a
// function that SIGKILLs what is left of the group, for after Wait.
func setGroup(cmd *exec.Cmd) func() {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}
