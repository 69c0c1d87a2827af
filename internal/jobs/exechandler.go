package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ExecConfig configures an ExecHandler.
type ExecConfig struct {
	// Command is the program and its arguments, run once per job.
	// Required: with none, every job fails.
	Command []string
	// Grace is how long a child has to exit after SIGTERM before it is
	// killed. Default 5s.
	Grace time.Duration
	// WorkerID is passed to the child as LOCKWORKER_WORKER_ID.
	WorkerID string
	// Stdout receives the child's standard output. Default: discard.
	Stdout io.Writer
	// Logger receives a line per run. Default: discard.
	Logger *slog.Logger
}

// ExecHandler runs a command per job: the payload on stdin, and
// LOCKWORKER_JOB_ID, LOCKWORKER_JOB_ATTEMPT, LOCKWORKER_FENCING_TOKEN and
// LOCKWORKER_WORKER_ID in the environment on top of the daemon's own. A
// non-zero exit is a failed attempt. When the job's context ends (leadership
// lost, work stopped) the child's process group gets SIGTERM and, Grace
// later, SIGKILL.
type ExecHandler struct {
	cfg ExecConfig
}

var _ Handler = (*ExecHandler)(nil)

// stderrTail is how much of a failed child's stderr goes into the error.
const stderrTail = 2 << 10

// NewExecHandler returns an ExecHandler with cfg's defaults filled in.
func NewExecHandler(cfg ExecConfig) *ExecHandler {
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	return &ExecHandler{cfg: cfg}
}

// Handle runs the command for job and waits for it.
func (h *ExecHandler) Handle(ctx context.Context, job Job, token int64) error {
	if len(h.cfg.Command) == 0 {
		return errors.New("jobs: exec handler has no command")
	}
	cmd := exec.CommandContext(ctx, h.cfg.Command[0], h.cfg.Command[1:]...)
	cmd.Stdin = bytes.NewReader(job.Payload)
	cmd.Stdout = h.cfg.Stdout
	tail := &tailWriter{max: stderrTail}
	cmd.Stderr = tail
	cmd.Env = append(os.Environ(),
		"LOCKWORKER_JOB_ID="+job.ID,
		"LOCKWORKER_JOB_ATTEMPT="+strconv.Itoa(job.Attempt),
		"LOCKWORKER_FENCING_TOKEN="+strconv.FormatInt(token, 10),
		"LOCKWORKER_WORKER_ID="+h.cfg.WorkerID,
	)
	cmd.WaitDelay = h.cfg.Grace
	stopGroup := setGroup(cmd) // SIGTERM to the group on cancel; WaitDelay then kills

	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		stopGroup() // leave nothing of the group behind once we gave up on it
	}
	took := time.Since(start)
	if err == nil {
		h.cfg.Logger.Debug("job command done", "jobId", job.ID, "token", token, "took_ms", took.Milliseconds())
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("jobs: command stopped (%w) after %s: %w", context.Cause(ctx), took.Round(time.Millisecond), err)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		msg := strings.TrimSpace(tail.String())
		if msg != "" {
			msg = ": " + msg
		}
		if code := exitErr.ExitCode(); code >= 0 {
			return fmt.Errorf("jobs: command exited with code %d%s", code, msg)
		}
		return fmt.Errorf("jobs: command ended by %s%s", exitErr, msg)
	}
	return fmt.Errorf("jobs: command: %w", err)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
