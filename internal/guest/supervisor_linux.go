//go:build linux

package guest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// parentDeathSignal is what the kernel sends the supervisor when the
	// daemon dies. It must be catchable (the supervisor then kills the
	// tree), and not SIGTERM, which asks for a graceful stop.
	parentDeathSignal = syscall.SIGHUP
	// sweepInterval is how often a tree being killed is looked over again
	// for descendants that were reparented to the supervisor.
	sweepInterval = 10 * time.Millisecond
	// commName is the supervisor's name in ps, top and pkill, so that
	// "pkill lockworker" does not hit it.
	commName = "lw-guest"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == supervisorArg {
		// Keep the main goroutine on the main thread, to which the runtime
		// locks it during init: the command's parent-death signal follows
		// the thread that forks it, and this one lives as long as the
		// process.
		runtime.LockOSThread()
	}
}

// MaybeSupervise runs the supervisor when args (os.Args) ask for it, and
// then reports handled and the exit code. main calls it before anything
// else and exits with code when handled:
//
//	if handled, code := guest.MaybeSupervise(os.Args); handled {
//		os.Exit(code)
//	}
//
// The mode is hidden: only Run starts it, with pipes the supervisor needs.
func MaybeSupervise(args []string) (handled bool, code int) {
	if len(args) < 2 || args[1] != supervisorArg {
		return false, 0
	}
	return true, supervise(args[2:])
}

// invocation is what Run passed on the supervisor's command line.
type invocation struct {
	ppid     int
	grace    time.Duration
	deadline int64 // CLOCK_MONOTONIC ns; 0 for none
	path     string
	argv     []string
}

func parseInvocation(args []string) (invocation, error) {
	if len(args) < 5 {
		return invocation{}, errors.New("want: <daemon pid> <grace> <deadline> <path> <argv...>")
	}
	ppid, err := strconv.Atoi(args[0])
	if err != nil {
		return invocation{}, fmt.Errorf("daemon pid: %w", err)
	}
	grace, err := time.ParseDuration(args[1])
	if err != nil || grace <= 0 {
		return invocation{}, fmt.Errorf("grace: %q is not a positive duration", args[1])
	}
	deadline, err := parseDeadline(args[2])
	if err != nil {
		return invocation{}, fmt.Errorf("deadline: %w", err)
	}
	return invocation{ppid: ppid, grace: grace, deadline: deadline, path: args[3], argv: args[4:]}, nil
}

func supervise(args []string) int {
	reportFile := os.NewFile(reportFD, "report")
	// Neither pipe may reach the command: the report's EOF and the
	// control's EOF must mean what they say.
	syscall.CloseOnExec(reportFD)
	syscall.CloseOnExec(controlFD)
	inv, err := parseInvocation(args)
	if err != nil {
		return writeReport(reportFile, report{Code: -1, StartError: "supervisor: " + err.Error()})
	}
	// Handled, not ignored: the command gets default dispositions back on
	// exec. SIGPIPE is caught so a write to a dead daemon's pipe fails
	// instead of ending the supervisor.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, parentDeathSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD, syscall.SIGPIPE)
	if err := becomeSupervisor(inv.ppid); err != nil {
		return writeReport(reportFile, report{Code: -1, StartError: "supervisor: " + err.Error()})
	}
	pid, err := syscall.ForkExec(inv.path, inv.argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Its own group, so one kill reaches all of it; SIGKILL if this
		// supervisor dies, whatever the cause.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return writeReport(reportFile, report{Code: -1, StartError: fmt.Sprintf("%s: %v", inv.path, err)})
	}
	s := &supervisor{self: os.Getpid(), cmd: pid, grace: inv.grace, graceTimer: idleTimer(), sweep: time.NewTicker(sweepInterval)}
	s.sweep.Stop()
	return writeReport(reportFile, s.loop(sigs, readControl(os.NewFile(controlFD, "control")), inv.deadline))
}

// becomeSupervisor makes orphaned descendants come to this process, and
// this process hear of the daemon's death, or finds the daemon already dead.
func becomeSupervisor(ppid int) error {
	_ = os.WriteFile("/proc/self/comm", []byte(commName), 0) // cosmetic
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(parentDeathSignal), 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_PDEATHSIG: %w", err)
	}
	// The daemon may have died before the signal was armed: then this
	// process was already reparented.
	if unix.Getppid() != ppid {
		return errors.New("the daemon exited before the command started")
	}
	return nil
}

func writeReport(f *os.File, r report) int {
	if err := json.NewEncoder(f).Encode(r); err != nil && r.StartError != "" {
		fmt.Fprintln(os.Stderr, "lockworker guest supervisor:", r.StartError)
	}
	f.Close()
	return r.exitCode()
}

// readControl delivers the control pipe's lines, and closes the channel on
// EOF: the daemon is gone.
func readControl(f *os.File) <-chan string {
	c := make(chan string)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}

// supervisor is the supervising process's state; only its main goroutine
// touches it.
type supervisor struct {
	self        int
	cmd         int  // the command's pid, and its process group's id
	reaped      bool // cmd was waited for: its pid (so its group id) may be reused
	status      unix.WaitStatus
	grace       time.Duration
	graceTimer  *time.Timer // SIGKILL for leftovers, grace after the command exited
	terminating bool        // SIGTERM was sent
	killing     bool        // SIGKILL was sent, and is repeated until no child is left
	killed      string      // why the supervisor killed the command on its own
	sweep       *time.Ticker
}

// loop runs until the command and every descendant are gone.
func (s *supervisor) loop(sigs <-chan os.Signal, control <-chan string, deadline int64) report {
	expire := idleTimer()
	if deadline != 0 {
		expire.Reset(time.Duration(deadline - monoNow()))
	}
	for {
		select {
		case sig := <-sigs:
			s.caught(sig)
		case msg, ok := <-control:
			if !ok { // the daemon is gone
				control = nil
				s.kill("parent")
			} else {
				s.command(msg, expire)
			}
		case <-expire.C:
			s.kill("deadline")
		case <-s.graceTimer.C:
			s.kill("")
		case <-s.sweep.C:
			s.signalAll(syscall.SIGKILL)
		}
		if s.reap() {
			return s.report()
		}
	}
}

// caught acts on a signal the supervisor caught. SIGCHLD and SIGPIPE only
// wake the loop, which reaps.
func (s *supervisor) caught(sig os.Signal) {
	switch sig {
	case parentDeathSignal:
		s.kill("parent")
	case syscall.SIGTERM, syscall.SIGINT:
		s.term()
	}
}

// command acts on a line of the control pipe: a moved lease deadline
// rearms expire.
func (s *supervisor) command(msg string, expire *time.Timer) {
	switch {
	case msg == msgTerm:
		s.term()
	case msg == msgKill:
		s.kill("")
	case strings.HasPrefix(msg, msgDeadline):
		if d, err := parseDeadline(strings.TrimPrefix(msg, msgDeadline)); err == nil && d != 0 {
			expire.Reset(time.Duration(d - monoNow()))
		}
	}
}

// term asks the whole tree to stop, once: a second SIGTERM means "now" to
// many programs.
func (s *supervisor) term() {
	if !s.terminating && !s.killing {
		s.terminating = true
		s.signalAll(syscall.SIGTERM)
	}
}

// leftovers stops what the command left running when it exited, as
// systemd does with a service's remaining processes: SIGTERM, and SIGKILL
// after the grace (or at the lease deadline, or on "kill", if sooner).
func (s *supervisor) leftovers() {
	s.term()
	s.graceTimer.Reset(s.grace)
}

// kill kills the whole tree, and keeps at it until it is gone. why is
// recorded when the supervisor decided it and the command was still running.
func (s *supervisor) kill(why string) {
	if s.killed == "" && !s.reaped {
		s.killed = why
	}
	if !s.killing {
		s.killing = true
		s.sweep.Reset(sweepInterval)
	}
	s.signalAll(syscall.SIGKILL)
}

// signalAll signals the command's group while its id is still the
// command's (it is not reaped), and every descendant, in or out of it.
func (s *supervisor) signalAll(sig syscall.Signal) {
	if !s.reaped {
		_ = unix.Kill(-s.cmd, sig)
	}
	signalDescendants(s.self, sig)
}

// reap collects every exited child; once the command is among them, what it
// left behind is stopped. It reports true when no child is left (ECHILD):
// as the supervisor is a subreaper, no descendant is left either.
func (s *supervisor) reap() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return true
		case err != nil, pid == 0:
			return false
		case pid == s.cmd:
			s.status, s.reaped = ws, true
			s.leftovers()
		}
	}
}

func (s *supervisor) report() report {
	r := report{Code: s.status.ExitStatus(), Killed: s.killed}
	if s.status.Signaled() {
		r.Code, r.Signal = -1, int(s.status.Signal())
	}
	return r
}
