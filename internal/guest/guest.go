package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockworker/lockworker/internal/tail"
)

// Config configures a Guest. New checks it.
type Config struct {
	// Command is the program and its arguments. Required. The program is
	// looked up in PATH at each Run.
	Command []string
	// Grace is how long the command's tree has between SIGTERM and SIGKILL
	// when it is stopped; the lease deadline shortens it. Default 5s; must
	// not be negative.
	Grace time.Duration
	// AllowEnv names the daemon's variables the command also gets (JOB_ENV).
	// Each must pass CheckEnvName. Default none.
	AllowEnv []string
	// Stdout receives the command's standard output. Default: discarded.
	Stdout io.Writer
	// Stderr also receives the command's standard error; its last 2 KiB go
	// into Run's errors either way. Default: only that tail is kept.
	Stderr io.Writer
	// Logger receives a line when a command has to be stopped or killed.
	// Default: discard.
	Logger *slog.Logger
	// Supervisor is the executable started as the command's supervisor;
	// its main must call MaybeSupervise first. Default, on Linux:
	// /proc/self/exe, the running binary itself even after a deploy
	// replaced the file on disk (os.Executable would name the new file).
	// Unused elsewhere.
	Supervisor string
}

// DefaultGrace is Config.Grace's default.
const DefaultGrace = 5 * time.Second

// stderrTail is how much of the command's stderr goes into Run's errors.
const stderrTail = 2 << 10

// Guest runs one configured command per Run call. A Guest is safe for
// concurrent use, though the job queue calls it one job at a time.
type Guest struct {
	cfg Config
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Guest, error) {
	var errs []error
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		errs = append(errs, errors.New("guest: Command is required"))
	}
	if cfg.Grace < 0 {
		errs = append(errs, fmt.Errorf("guest: Grace must not be negative, got %s", cfg.Grace))
	}
	for _, name := range cfg.AllowEnv {
		if err := CheckEnvName(name); err != nil {
			errs = append(errs, fmt.Errorf("guest: AllowEnv: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Supervisor == "" {
		cfg.Supervisor = defaultSupervisor
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	cfg.AllowEnv = append([]string(nil), cfg.AllowEnv...)
	return &Guest{cfg: cfg}, nil
}

// ErrStopped is wrapped by Run's error when the command did not end on its
// own: its context ended (the error also wraps context.Cause), or the lease
// deadline passed.
var ErrStopped = errors.New("guest: command stopped")

// ErrDeadline is wrapped too when the lease deadline the command ran under
// passed while it ran, as far as its supervisor knew it (a deadline the
// daemon moved while it was frozen may not have reached the supervisor):
// the leadership may be gone, so the command's effects, if any, need a
// new leader to be redone, never this one.
var ErrDeadline = errors.New("guest: the lease deadline passed")

// ExitError is Run's error for a command that ended on its own, unsuccessfully.
type ExitError struct {
	Code   int            // exit code; -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it, or 0
	Stderr string         // the end of its standard error, trimmed
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("guest: command exited with code %d", e.Code)
	if e.Code < 0 {
		msg = fmt.Sprintf("guest: command ended by signal %d (%s)", int(e.Signal), e.Signal)
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Run runs the command once, with stdin on its standard input and the
// environment Env(os.Environ(), AllowEnv, vars) (vars' names must start
// with LOCKWORKER_), and waits for it.
//
// When ctx ends, the command's whole process tree gets SIGTERM, and SIGKILL
// at min(now+Grace, deadline()). deadline is the lease's local deadline,
// re-read while the command runs (a renewal moves it); nil means none. The
// supervisor enforces the latest deadline it was told even when the daemon
// is frozen, so ctx must end by then too (the job's context does).
//
// Run returns only once the command and every descendant are gone. It
// returns nil on exit code 0, an *ExitError for a failure of the command's
// own, or an error wrapping ErrStopped (and context.Cause(ctx)) when it was
// stopped; a command that exits 0 after SIGTERM was still stopped.
func (g *Guest) Run(ctx context.Context, stdin []byte, vars map[string]string, deadline func() time.Time) error {
	if err := checkVars(vars); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w) before it started", ErrStopped, context.Cause(ctx))
	}
	var d0 time.Time
	if deadline != nil {
		if d0 = deadline(); !time.Now().Before(d0) {
			return fmt.Errorf("%w (%w) before it started", ErrStopped, ErrDeadline)
		}
	}
	path, err := exec.LookPath(g.cfg.Command[0])
	if err != nil {
		return fmt.Errorf("guest: command %q: %w", g.cfg.Command[0], err)
	}
	errTail := &tail.Buffer{Max: stderrTail}
	var stderr io.Writer = errTail
	if g.cfg.Stderr != nil {
		stderr = io.MultiWriter(errTail, g.cfg.Stderr)
	}
	start := time.Now()
	out, err := g.run(ctx, launch{
		path: path, stdin: stdin, env: Env(os.Environ(), g.cfg.AllowEnv, vars),
		stdout: g.cfg.Stdout, stderr: stderr, deadline: deadline, d0: d0,
	})
	if err != nil {
		return err
	}
	return out.err(ctx, strings.TrimSpace(errTail.String()), time.Since(start))
}

// launch is one Run's command, as the platform's run starts it.
type launch struct {
	path     string
	stdin    []byte
	env      []string
	stdout   io.Writer
	stderr   io.Writer
	deadline func() time.Time
	d0       time.Time // deadline() at the start; zero for none
}

// outcome is how a run ended.
type outcome struct {
	code     int            // exit code; -1 for a signal
	signal   syscall.Signal // what ended it, or 0
	startErr string         // the supervisor could not start the command
	stopped  bool           // Run asked it to stop: ctx ended
	killed   killReason     // why SIGKILL was needed, if it was
}

// killReason says what made the tree get SIGKILL.
type killReason string

const (
	killedAtDeadline killReason = "at the lease deadline"
	killedAfterGrace killReason = "after the grace period"
)

func (o outcome) err(ctx context.Context, stderr string, took time.Duration) error {
	took = took.Round(time.Millisecond)
	how := fmt.Sprintf("exited with code %d", o.code)
	if o.code < 0 {
		how = fmt.Sprintf("ended by signal %d (%s)", int(o.signal), o.signal)
	}
	if o.killed != "" {
		how = "killed " + string(o.killed)
	}
	if stderr != "" {
		how += ": " + stderr
	}
	switch {
	case o.startErr != "":
		return fmt.Errorf("guest: starting the command: %s", o.startErr)
	case o.stopped:
		return fmt.Errorf("%w (%w) after %s: %s", ErrStopped, context.Cause(ctx), took, how)
	case o.killed == killedAtDeadline:
		return fmt.Errorf("%w (%w) after %s: %s", ErrStopped, ErrDeadline, took, how)
	case o.killed != "":
		return fmt.Errorf("%w after %s: %s", ErrStopped, took, how)
	case o.code == 0:
		return nil
	}
	return &ExitError{Code: o.code, Signal: o.signal, Stderr: stderr}
}
