//go:build !linux

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Off Linux there is no supervisor: the command is started directly, and
// only the command itself is signalled.
const defaultSupervisor = ""

// outputWait bounds Wait's wait for the command's output pipes after it
// exited, which a surviving descendant may hold open.
const outputWait = time.Second

// MaybeSupervise reports false: off Linux there is no supervisor mode.
func MaybeSupervise(args []string) (handled bool, code int) { return false, 0 }

func (g *Guest) run(ctx context.Context, l launch) (outcome, error) {
	cmd := exec.Command(l.path, g.cfg.Command[1:]...)
	cmd.Args[0] = g.cfg.Command[0]
	cmd.Env = l.env
	cmd.Stdin = bytes.NewReader(l.stdin)
	cmd.Stdout = l.stdout
	cmd.Stderr = l.stderr
	cmd.WaitDelay = outputWait
	if err := cmd.Start(); err != nil {
		return outcome{}, fmt.Errorf("guest: starting the command: %w", err)
	}
	stop, err := g.watch(ctx, direct{cmd}, l.deadline, l.d0)
	ps := cmd.ProcessState
	if ps == nil {
		return outcome{}, fmt.Errorf("guest: waiting for the command: %w", err)
	}
	o := outcome{code: ps.ExitCode(), stopped: stop.stopped, killed: stop.killed}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.signal = ws.Signal()
	}
	return o, nil
}

// direct is a command started without a supervisor.
type direct struct{ cmd *exec.Cmd }

var _ tree = direct{}

func (d direct) wait() error { return d.cmd.Wait() }

func (d direct) setDeadline(time.Time) {}

func (d direct) term() {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = d.cmd.Process.Kill() // no SIGTERM here (Windows)
	}
}

func (d direct) kill() { _ = d.cmd.Process.Kill() }

func (d direct) force() {}
