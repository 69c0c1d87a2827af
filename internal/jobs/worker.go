package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// Queue is the queue to process. Required.
	Queue *Queue
	// Handler processes jobs. Required.
	Handler Handler
	// MaxAttempts is how many deliveries a job gets before it is
	// dead-lettered. Default 5; negative is an error.
	MaxAttempts int
	// Batch is how many jobs one step claims at most: a deep queue is
	// run Batch jobs per round trip to Redis, committed together (group
	// commit). 1 is one job per round trip. Default DefaultBatch. A
	// leader lost mid-batch leaves the whole batch to run again.
	Batch int
	// BatchWindow bounds a batch by time: once the jobs of a batch have
	// run this long, the ones finished are committed and the rest given
	// back, so slow jobs are committed as they go. Default 50ms.
	BatchWindow time.Duration
	// Backoff spaces the retries of a failed job, and of a Redis call that
	// failed. Default {Base: 100ms, Max: 5s}.
	Backoff backoff.Policy
	// PollInterval is how long an idle leader waits before it looks for new
	// jobs again, unless Notify wakes it first. Default 500ms. A busy
	// leader does not wait.
	PollInterval time.Duration
	// HostFaultLimit is how many host faults in a row (jobs that could
	// not start: ErrHostFault) end the leadership. Default 5, spaced by
	// Backoff.
	HostFaultLimit int
	// Logger receives the worker's logs. Default: discard.
	Logger *slog.Logger
}

// DefaultBatch is WorkerConfig.Batch's default (and JOB_BATCH's): where
// no-op jobs/s stopped growing with the batch size (BenchmarkBatchSize).
const DefaultBatch = 64

// MaxWorkerBatch is the largest WorkerConfig.Batch: one step's reply carries
// every claimed payload.
const MaxWorkerBatch = 1000

// Worker is the leader's side of the queue: Process runs the handler on
// each job in order and records every outcome with a fenced write.
type Worker struct {
	cfg  WorkerConfig
	q    *Queue
	log  *slog.Logger
	wake chan struct{} // one pending enqueue notice at most
	done atomic.Int64  // jobs this worker committed
}

// NewWorker validates cfg, fills in defaults and returns a Worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jobs: "+format, args...)) }
	if cfg.Queue == nil {
		bad("Queue is required")
	}
	if cfg.Handler == nil {
		bad("Handler is required")
	}
	if cfg.MaxAttempts < 0 {
		bad("MaxAttempts must be at least 1, got %d", cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.Batch < 0 || cfg.Batch > MaxWorkerBatch {
		bad("Batch must be between 1 and %d, got %d", MaxWorkerBatch, cfg.Batch)
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.BatchWindow < 0 {
		bad("BatchWindow must not be negative, got %s", cfg.BatchWindow)
	}
	if cfg.BatchWindow == 0 {
		cfg.BatchWindow = 50 * time.Millisecond
	}
	if cfg.Backoff == (backoff.Policy{}) {
		cfg.Backoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}
	}
	if err := cfg.Backoff.Validate(); err != nil {
		bad("Backoff: %v", err)
	}
	if cfg.PollInterval < 0 {
		bad("PollInterval must not be negative, got %s", cfg.PollInterval)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	if cfg.HostFaultLimit < 0 {
		bad("HostFaultLimit must not be negative, got %d", cfg.HostFaultLimit)
	}
	if cfg.HostFaultLimit == 0 {
		cfg.HostFaultLimit = 5
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Worker{cfg: cfg, q: cfg.Queue, log: cfg.Logger, wake: make(chan struct{}, 1)}, nil
}

// Committed counts the jobs this Worker committed, over all leaderships.
func (w *Worker) Committed() int64 { return w.done.Load() }

// Notify wakes an idle Process at once instead of at its next poll; wire
// it to Queue.EnqueuedChannel (package notice). Safe from any goroutine,
// never blocks; notices coalesce.
func (w *Worker) Notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// idle waits for an enqueue notice, the next poll, or the end of ctx.
func (w *Worker) idle(ctx context.Context) {
	t := time.NewTimer(backoff.Jitter(w.cfg.PollInterval*3/4, 1.0/3)) // in [P/2, P]
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-w.wake:
	}
}
