package jobs

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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
	// Slots bounds the jobs in flight; share one Slots between the
	// workers of every partition a replica leads (JOB_CONCURRENCY).
	// Default: slots of its own, DefaultConcurrency of them.
	Slots *Slots
	// MaxAttempts is how many deliveries a job gets before it fails for
	// good (OnFailure). Default DefaultMaxAttempts; negative is an error.
	MaxAttempts int
	// Retry spaces the deliveries of a failing job: the n-th retry waits
	// Retry.Delay(n) (Base doubling up to Max, jittered), or what the
	// handler's answer asks (RetryAfter: HTTP 429, 503), at most Max.
	// Only the job's group waits. Default {Base: 1s, Max: 1m}.
	Retry backoff.Policy
	// OnFailure is what becomes of a job that failed for good: its group
	// is parked (FailurePark, the default) or the job is dead-lettered and its
	// group goes on (FailureDeadLetter).
	OnFailure FailurePolicy
	// Batch is how many jobs of one group a run claims at most: a deep
	// group is run Batch jobs per round trip to Redis, committed
	// together (group commit). 1 is one job per round trip. Default
	// DefaultBatch. A leader lost mid-run leaves the whole run to run
	// again.
	Batch int
	// BatchWindow bounds a run by time: once its jobs have run this long,
	// the ones finished are committed and the rest given back, so slow
	// jobs are committed as they go. Default 50ms.
	BatchWindow time.Duration
	// Backoff spaces the retries of a Redis call that failed, and of a
	// job that could not start for want of host resources. Default
	// {Base: 100ms, Max: 5s}.
	Backoff backoff.Policy
	// PollInterval is how long an idle leader waits before it looks for new
	// jobs again, unless Notify wakes it first. Default 500ms. A busy
	// leader does not wait.
	PollInterval time.Duration
	// HostFaultLimit is how many host faults in a row (jobs that could
	// not start: ErrHostFault) end the leadership. Default 5, spaced by
	// Backoff.
	HostFaultLimit int
	// OnPause, optional, is told when Process finds the queue paused by
	// an operator (true) or running again (false): at the first step of a
	// leadership that finds it paused, and at each change after. It is
	// called on Process's goroutine and must not block (the daemon posts
	// it to the lane, whose reason then says paused).
	OnPause func(paused bool)
	// Logger receives the worker's logs. Default: discard.
	Logger *slog.Logger
}

// DefaultBatch is WorkerConfig.Batch's default (and JOB_BATCH's): where
// no-op jobs/s stopped growing with the batch size (BenchmarkBatchSize).
const DefaultBatch = 64

// MaxWorkerBatch is the largest WorkerConfig.Batch: one step's reply carries
// every claimed payload.
const MaxWorkerBatch = 1000

// DefaultMaxAttempts is WorkerConfig.MaxAttempts' default (and
// JOB_MAX_ATTEMPTS'): with the default Retry, about 20 minutes of retries
// before a group parks, so a downstream outage of a few minutes parks
// nothing.
const DefaultMaxAttempts = 25

// FailurePolicy is what becomes of a job that failed for good (its
// attempts exhausted, or a permanent error).
type FailurePolicy int

const (
	// FailurePark holds the job's group, the job and every later job of its
	// key, in order, until an operator retries or skips it.
	FailurePark FailurePolicy = iota
	// FailureDeadLetter moves the job to the dead letters and lets its group go
	// on: the key's order breaks there.
	FailureDeadLetter
)

func (p FailurePolicy) String() string {
	switch p {
	case FailurePark:
		return "park"
	case FailureDeadLetter:
		return "dead-letter"
	}
	return "FailurePolicy(" + strconv.Itoa(int(p)) + ")"
}

// ParseFailurePolicy reads JOB_ON_FAILURE: park or dead-letter.
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	for _, p := range []FailurePolicy{FailurePark, FailureDeadLetter} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("jobs: on failure: want park or dead-letter, got %q", s)
}

// Worker is the leader's side of the queue: Process runs the handler on
// the claimed groups' jobs, several groups side by side and each group's
// jobs one at a time in order, and records every outcome with a fenced
// write.
type Worker struct {
	cfg      WorkerConfig
	q        *Queue
	slots    *Slots
	log      *slog.Logger
	wake     chan struct{} // one pending enqueue notice at most
	done     atomic.Int64  // jobs this worker committed
	inFlight atomic.Int64  // runs executing now
}

// NewWorker validates cfg, fills in defaults and returns a Worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.defaults()
	if cfg.Slots == nil {
		cfg.Slots, _ = NewSlots(DefaultConcurrency)
	}
	return &Worker{cfg: cfg, q: cfg.Queue, slots: cfg.Slots, log: cfg.Logger, wake: make(chan struct{}, 1)}, nil
}

// check refuses what no default can fix.
func (c *WorkerConfig) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jobs: "+format, args...)) }
	if c.Queue == nil {
		bad("Queue is required")
	}
	if c.Handler == nil {
		bad("Handler is required")
	}
	if c.MaxAttempts < 0 {
		bad("MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	}
	if c.Batch < 0 || c.Batch > MaxWorkerBatch {
		bad("Batch must be between 1 and %d, got %d", MaxWorkerBatch, c.Batch)
	}
	if c.OnFailure != FailurePark && c.OnFailure != FailureDeadLetter {
		bad("OnFailure must be FailurePark or FailureDeadLetter, got %v", c.OnFailure)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"BatchWindow", c.BatchWindow}, {"PollInterval", c.PollInterval}} {
		if d.d < 0 {
			bad("%s must not be negative, got %s", d.name, d.d)
		}
	}
	if c.HostFaultLimit < 0 {
		bad("HostFaultLimit must not be negative, got %d", c.HostFaultLimit)
	}
	for _, p := range []struct {
		name string
		p    backoff.Policy
	}{{"Retry", c.Retry}, {"Backoff", c.Backoff}} {
		if err := p.p.Validate(); p.p != (backoff.Policy{}) && err != nil {
			bad("%s: %v", p.name, err)
		}
	}
	return errors.Join(errs...)
}

// defaults fills in every field left zero.
func (c *WorkerConfig) defaults() {
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.BatchWindow = cmp.Or(c.BatchWindow, 50*time.Millisecond)
	c.PollInterval = cmp.Or(c.PollInterval, 500*time.Millisecond)
	c.HostFaultLimit = cmp.Or(c.HostFaultLimit, 5)
	c.Retry = cmp.Or(c.Retry, backoff.Policy{Base: time.Second, Max: time.Minute})
	c.Backoff = cmp.Or(c.Backoff, backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second})
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// InFlight is how many of this worker's runs are executing: its jobs in
// flight (a run executes one job at a time). Slots.InUse counts the
// replica's.
func (w *Worker) InFlight() int { return int(w.inFlight.Load()) }

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
