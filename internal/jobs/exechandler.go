package jobs

import (
	"context"
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
// LOCKWORKER_KEY (the job's ordering key, "" without one);
// its own process tree, stopped with SIGTERM when the job's context ends
// and killed no later than the lease deadline, and when the daemon dies.
// A non-zero exit is a failed attempt.
type ExecHandler struct {
	g        *guest.Guest
	workerID string
	log      *slog.Logger
}

var _ Handler = (*ExecHandler)(nil)

// NewExecHandler validates cfg and returns an ExecHandler with its
// defaults filled in.
func NewExecHandler(cfg ExecConfig) (*ExecHandler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g, err := guest.New(guest.Config{
		Command: cfg.Command, Grace: cfg.Grace, AllowEnv: cfg.AllowEnv,
		Stdout: cfg.Stdout, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: exec handler: %w", err)
	}
	return &ExecHandler{g: g, workerID: cfg.WorkerID, log: cfg.Logger}, nil
}

// Handle runs the command for job and waits until it and every process it
// started are gone.
func (h *ExecHandler) Handle(ctx context.Context, job Job, lease Lease) error {
	token := lease.Token()
	start := time.Now()
	err := h.g.Run(ctx, job.Payload, map[string]string{
		"LOCKWORKER_JOB_ID":        job.ID,
		"LOCKWORKER_JOB_ATTEMPT":   strconv.Itoa(job.Attempt),
		"LOCKWORKER_FENCING_TOKEN": strconv.FormatInt(token, 10),
		"LOCKWORKER_WORKER_ID":     h.workerID,
		"LOCKWORKER_PARTITION":     strconv.Itoa(job.Partition),
		"LOCKWORKER_KEY":           job.Key,
	}, lease.Deadline)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	h.log.Debug("job command done", "jobId", job.ID, "token", token, "tookMs", time.Since(start).Milliseconds())
	return nil
}
