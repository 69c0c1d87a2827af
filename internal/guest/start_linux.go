//go:build linux

package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// defaultSupervisor is the running binary itself, even when the file it was
// started from has been replaced or deleted since.
const defaultSupervisor = "/proc/self/exe"

const (
	// supervisorName is the supervisor's argv[0], for ps.
	supervisorName = "lockworker-guest"
	// outputWait bounds Wait's wait for the command's output pipes after
	// the supervisor exited. The supervisor exits after the whole tree, so
	// this only matters if something outside it holds them.
	outputWait = time.Second
	// sendTimeout bounds a write to the control pipe (a stopped
	// supervisor does not read it).
	sendTimeout = 100 * time.Millisecond
)

func (g *Guest) run(ctx context.Context, l launch) (outcome, error) {
	// The kernel sends the supervisor its parent-death signal when the
	// thread that forked it exits, not the process (go.dev/issue/27505):
	// keep this thread until the supervisor is gone. Go only ends a thread
	// whose goroutine exits while locked, which this one does not.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := g.startSupervisor(l)
	if err != nil {
		return outcome{}, err
	}
	defer s.close()
	stop, waitErr := g.watch(ctx, s, l.deadline, l.d0)
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		g.cfg.Logger.Warn("job command's output stayed open after its process tree ended", "waited", outputWait.String())
	}
	rep, err := s.readReport()
	if err != nil {
		return outcome{}, fmt.Errorf("guest: the supervisor ended without a report (%v): %w", waitErr, err)
	}
	return rep.outcome(stop), nil
}

// supervised is a command running under its supervisor; it is the tree
// that watch drives.
type supervised struct {
	cmd     *exec.Cmd
	report  *os.File // read end of the report pipe
	control *os.File // write end of the control pipe
}

var _ tree = (*supervised)(nil)

func (g *Guest) startSupervisor(l launch) (*supervised, error) {
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	controlR, controlW, err := os.Pipe()
	if err != nil {
		reportR.Close()
		reportW.Close()
		return nil, fmt.Errorf("guest: %w", err)
	}
	args := append([]string{supervisorArg, strconv.Itoa(os.Getpid()), g.cfg.Grace.String(), formatDeadline(l.d0), l.path}, g.cfg.Command...)
	cmd := exec.Command(g.cfg.Supervisor, args...)
	cmd.Args[0] = supervisorName
	cmd.Env = l.env
	cmd.Stdin = bytes.NewReader(l.stdin)
	cmd.Stdout = l.stdout
	cmd.Stderr = l.stderr
	cmd.ExtraFiles = []*os.File{reportW, controlR} // fds 3 and 4
	// A group of its own: signals for the daemon's group (a terminal's ^C)
	// are the daemon's to act on, through the control pipe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputWait
	err = cmd.Start()
	reportW.Close()
	controlR.Close()
	if err != nil {
		reportR.Close()
		controlW.Close()
		return nil, fmt.Errorf("guest: starting the supervisor %s: %w", g.cfg.Supervisor, err)
	}
	return &supervised{cmd: cmd, report: reportR, control: controlW}, nil
}

func (s *supervised) wait() error { return s.cmd.Wait() }

func (s *supervised) setDeadline(d time.Time) { _ = s.send(msgDeadline + formatDeadline(d)) }

func (s *supervised) term() { _ = s.send(msgTerm) }

func (s *supervised) kill() {
	if s.send(msgKill) != nil {
		s.force()
	}
}

// force kills the supervisor itself: the command dies by its own
// parent-death signal, but descendants it started may survive.
func (s *supervised) force() { _ = s.cmd.Process.Kill() }

func (s *supervised) send(msg string) error {
	if err := s.control.SetWriteDeadline(time.Now().Add(sendTimeout)); err != nil {
		return err
	}
	_, err := io.WriteString(s.control, msg+"\n")
	return err
}

// readReport reads the supervisor's report, after it exited.
func (s *supervised) readReport() (report, error) {
	var r report
	_ = s.report.SetReadDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(io.LimitReader(s.report, 64<<10))
	if err != nil {
		return r, err
	}
	if len(b) == 0 {
		return r, errors.New("the report pipe is empty")
	}
	return r, json.Unmarshal(b, &r)
}

func (s *supervised) close() {
	s.report.Close()
	s.control.Close()
}
