package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/lockworker/lockworker/internal/guest"
)

// ExecConfig configures an ExecHandler.
type ExecConfig struct {
	// Command is the program and its arguments, run once per job.
	// Required.
	Command []string
	// Grace is how long a stopped command's process tree has between
	// SIGTERM and SIGKILL; the lease deadline shortens it (JOB_STOP_GRACE).
	// Default 5s; negative is an error.
	Grace time.Duration
	// Timeout bounds each run (JOB_TIMEOUT): a command still running
	// then is stopped as above (SIGTERM, then SIGKILL after Grace), its
	// whole process tree, and the attempt fails (retried). Default
	// DefaultHTTPTimeout; negative is an error.
	Timeout time.Duration
	// AllowEnv names the daemon's variables the command also gets
	// (JOB_ENV); see guest.CheckEnvName for what is refused.
	AllowEnv []string
	// WorkerID is passed to the command as LOCKWORKER_WORKER_ID.
	WorkerID string
	// Stdout receives the command's standard output. Default: discard.
	Stdout io.Writer
	// Logger receives a line per run. Default: discard.
	Logger *slog.Logger
}

// ExecHandler runs a command per job as a guest (package guest): the
// payload on stdin; a clean environment with LOCKWORKER_JOB_ID,
// LOCKWORKER_JOB_ATTEMPT, LOCKWORKER_FENCING_TOKEN (the token of the job's
// partition's leadership), LOCKWORKER_WORKER_ID, LOCKWORKER_PARTITION and
// LOCKWORKER_KEY (the job's ordering key, "" without one); for a delayed
// job LOCKWORKER_DUE_AT, and for a schedule's tick LOCKWORKER_SCHEDULE
// and LOCKWORKER_SCHEDULED_AT (and LOCKWORKER_DUE_AT, the same time), in
// FormatTime's form;
// its own process tree, stopped with SIGTERM when the job's context ends
// or Timeout passes, and killed no later than the lease deadline, and
// when the daemon dies. A non-zero exit is a failed attempt, and so is a
// command stopped at its Timeout.
type ExecHandler struct {
	g        *guest.Guest
	workerID string
	timeout  time.Duration
	log      *slog.Logger
}

// FormatTime is how a job's times go to its handler (LOCKWORKER_DUE_AT,
// Lockworker-Due-At, ...): RFC 3339 in UTC, to the millisecond.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// ErrTimeout is the cause of a command stopped at ExecConfig.Timeout.
var ErrTimeout = errors.New("jobs: exec: the command outlived JOB_TIMEOUT")

var _ Handler = (*ExecHandler)(nil)

// NewExecHandler validates cfg and returns an ExecHandler with its
// defaults filled in.
func NewExecHandler(cfg ExecConfig) (*ExecHandler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("jobs: exec handler: Timeout must not be negative, got %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultHTTPTimeout
	}
	g, err := guest.New(guest.Config{
		Command: cfg.Command, Grace: cfg.Grace, AllowEnv: cfg.AllowEnv,
		Stdout: cfg.Stdout, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: exec handler: %w", err)
	}
	return &ExecHandler{g: g, workerID: cfg.WorkerID, timeout: cfg.Timeout, log: cfg.Logger}, nil
}

// Handle runs the command for job and waits until it and every process it
// started are gone.
func (h *ExecHandler) Handle(ctx context.Context, job Job, lease Lease) error {
	token := lease.Token()
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, h.timeout, fmt.Errorf("%w (%s)", ErrTimeout, h.timeout))
	defer cancel()
	vars := map[string]string{
		"LOCKWORKER_JOB_ID":        job.ID,
		"LOCKWORKER_JOB_ATTEMPT":   strconv.Itoa(job.Attempt),
		"LOCKWORKER_FENCING_TOKEN": strconv.FormatInt(token, 10),
		"LOCKWORKER_WORKER_ID":     h.workerID,
		"LOCKWORKER_PARTITION":     strconv.Itoa(job.Partition),
		"LOCKWORKER_KEY":           job.Key,
	}
	if !job.DueAt.IsZero() {
		vars["LOCKWORKER_DUE_AT"] = FormatTime(job.DueAt)
	}
	if job.Schedule != "" {
		vars["LOCKWORKER_SCHEDULE"] = job.Schedule
		vars["LOCKWORKER_SCHEDULED_AT"] = FormatTime(job.DueAt)
	}
	err := h.g.Run(ctx, job.Payload, vars, lease.Deadline)
	if errors.Is(err, guest.ErrDeadline) && ctx.Err() == nil {
		// Its supervisor killed it at a deadline the lease may have moved
		// past (the daemon was frozen, say): the lease is ending as far as
		// the command knew, so a redo needs the next leader, never this
		// one (its effects may have landed under this token already).
		return fmt.Errorf("jobs: %w: %w", ErrLeaseEnding, err)
	}
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	h.log.Debug("job command done", "jobId", job.ID, "token", token, "tookMs", time.Since(start).Milliseconds())
	return nil
}
