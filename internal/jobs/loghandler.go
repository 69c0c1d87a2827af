package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// LogConfig configures a LogHandler.
type LogConfig struct {
	// Duration is how long the simulated work takes. Default 1s (zero
	// means the default); negative is an error.
	Duration time.Duration
	// Logger receives "Doing some heavy work...". Default: discard.
	Logger *slog.Logger
}

// LogHandler is the original demo's simulated heavy work: it logs, then
// waits Duration unless its context ends first.
type LogHandler struct {
	d   time.Duration
	log *slog.Logger
}

var _ Handler = (*LogHandler)(nil)

// NewLogHandler validates cfg and returns a LogHandler with its defaults
// filled in.
func NewLogHandler(cfg LogConfig) (*LogHandler, error) {
	if cfg.Duration < 0 {
		return nil, fmt.Errorf("jobs: log handler: Duration must not be negative, got %s", cfg.Duration)
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &LogHandler{d: cfg.Duration, log: cfg.Logger}, nil
}

// Handle logs the job and waits. It returns the context's cause when the
// context ends first.
func (h *LogHandler) Handle(ctx context.Context, job Job, lease Lease) error {
	token := lease.Token()
	h.log.Info("Doing some heavy work...", "jobId", job.ID, "token", token, "attempt", job.Attempt)
	t := time.NewTimer(h.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		h.log.Info("Work done", "jobId", job.ID, "token", token, "tookMs", h.d.Milliseconds())
		return nil
	}
}
