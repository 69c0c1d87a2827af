package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
)

// Process is the leader's loop. Each round trip to Redis is one fenced
// step (step.lua) that records the outcomes of the jobs just run and claims
// the next ones: up to Batch jobs after the last committed one. Process
// runs the claimed jobs' handler one at a time, in enqueue order, then
// records them with the next step: committed, or dead-lettered after
// MaxAttempts failures (at once for a handler error wrapping
// ErrPermanent). A job that could not start for want of host resources
// (ErrHostFault) costs no attempt; HostFaultLimit of them in a row end
// Process with that error. It returns nil once ctx is done, ErrLeaseInvalid when the
// lease stops being valid first, and an error wrapping ErrStaleToken when
// Redis, or the handler's own store, says a newer leader exists. Redis
// errors are logged and retried with backoff, never returned.
//
// ctx is the leadership's context: its owner (package leader) cancels it
// when the lease's deadline passes, and jobs run under it. Process itself
// only checks lease.Valid before each job and before each step.
func (w *Worker) Process(ctx context.Context, lease Lease) error {
	if lease == nil {
		return errors.New("jobs: Process needs a lease")
	}
	token := lease.Token()
	log := w.log.With("token", token)
	log.Info("processing jobs", "batch", w.cfg.Batch)
	var (
		b          batch         // to record with the next step
		wait       time.Duration // a failed job's retry delay, after its batch is recorded
		size       = w.cfg.Batch // jobs to claim next
		redisFails int
		hostFaults int // jobs in a row that could not start (ErrHostFault)
		paused     bool
	)
	for {
		if ctx.Err() != nil {
			return w.flush(ctx, lease, b, log)
		}
		if !lease.Valid() {
			log.Warn("lease no longer valid: taking no more jobs, recording none", "finished", len(b.done))
			return ErrLeaseInvalid
		}
		claim := size
		if wait > 0 {
			claim = 0 // record the failure's batch now, claim after the delay
			if b.empty() {
				backoff.Sleep(ctx, wait) // nothing to record
				wait = 0
				continue
			}
		}
		s, err := w.q.step(ctx, token, b, claim)
		if errors.Is(err, ErrStaleToken) {
			return err
		}
		if err != nil {
			w.unreachable(ctx, err, &redisFails, log)
			continue
		}
		redisFails = 0
		w.recorded(s, b, log)
		b = batch{from: s.position}
		if wait > 0 {
			backoff.Sleep(ctx, wait) // the next step delivers the failed job again
			wait = 0
			continue
		}
		if paused = pausedNow(paused, s.paused, log); paused || len(s.claimed) == 0 {
			w.idle(ctx) // Resume or an enqueue notice wakes it
			continue
		}
		var cut bool
		if wait, cut, err = w.runBatch(ctx, lease, s.claimed, &b, log); errors.Is(err, ErrHostFault) {
			// The job and the rest go back uncounted with the next step.
			if hostFaults++; hostFaults < w.cfg.HostFaultLimit {
				wait = w.cfg.Backoff.Delay(hostFaults)
				log.Warn("a job could not start: the host is out of resources; it costs no attempt, retrying",
					"hostFaults", hostFaults, "limit", w.cfg.HostFaultLimit, "retryInMs", wait.Milliseconds(), "err", err)
				continue
			}
			log.Error("jobs cannot start: the host is out of resources; giving the leadership up",
				"hostFaults", hostFaults, "err", err)
			if ferr := w.flush(ctx, lease, b, log); ferr != nil {
				return ferr
			}
			return err
		}
		if err != nil {
			if errors.Is(err, ErrStaleToken) {
				// The handler's store saw a newer token. Redis may not
				// have (the step is fenced on its own): record the jobs
				// finished before, give the rest back uncounted.
				if ferr := w.flush(ctx, lease, b, log); ferr != nil {
					return ferr
				}
			}
			return err
		}
		hostFaults = 0
		size = w.nextSize(size, len(s.claimed), len(b.done), cut)
	}
}

// nextSize is how many jobs to claim after a batch of claimed jobs of
// which done ran: as many as ran when the window cut it, twice as many
// (up to Batch) when the queue filled it.
func (w *Worker) nextSize(size, claimed, done int, cut bool) int {
	switch {
	case cut:
		return max(1, done)
	case claimed == size:
		return min(w.cfg.Batch, 2*size)
	}
	return size
}

// unreachable waits out a step that did not reach the queue, the fails-th
// in a row, with back-off; at once when ctx is done.
func (w *Worker) unreachable(ctx context.Context, err error, fails *int, log *slog.Logger) {
	if ctx.Err() != nil {
		return
	}
	*fails++
	d := w.cfg.Backoff.Delay(*fails)
	log.Warn("could not reach the queue, retrying", "err", err, "retryInMs", d.Milliseconds())
	backoff.Sleep(ctx, d)
}

// recorded accounts for a successful step that carried b.
func (w *Worker) recorded(s stepped, b batch, log *slog.Logger) {
	switch s.record {
	case recordOK, recordDone:
		var n int64
		for _, o := range b.done {
			if o.cause == "" {
				n++
			}
		}
		w.done.Add(n)
	case recordOrder:
		// The store went back: a Redis failover lost the last writes
		// (async replication). Its position is the truth: the step claimed
		// from it, and the jobs whose commits were lost run again.
		log.Warn("the queue's committed position is behind this leader's last commit (writes lost in a Redis failover?); resuming from it",
			"err", orderError(b.done, s.position))
	}
}

// flush records b once more after ctx ended (work stopped right as jobs
// finished) or a handler's store found the token stale, under a context
// bounded by the lease deadline, so finished jobs are not redone by the
// next leader. It claims nothing.
func (w *Worker) flush(ctx context.Context, lease Lease, b batch, log *slog.Logger) error {
	if b.empty() || !lease.Valid() {
		return nil
	}
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), lease.Deadline())
	defer cancel()
	s, err := w.q.step(wctx, lease.Token(), b, 0)
	if errors.Is(err, ErrStaleToken) {
		return err
	}
	if err != nil {
		log.Warn("could not record finished jobs while stopping; they will run again", "jobs", len(b.done), "err", err)
		return nil
	}
	w.recorded(s, b, log)
	return nil
}

// pausedNow is whether the queue is paused after a step that said
// pausedFlag: a change is logged.
func pausedNow(paused, pausedFlag bool, log *slog.Logger) bool {
	switch {
	case pausedFlag && !paused:
		log.Info("queue paused: taking no new job")
	case !pausedFlag && paused:
		log.Info("queue resumed")
	}
	return pausedFlag
}

// runBatch runs claimed one at a time, in order, and adds to b what to
// record. It stops early, giving back the jobs not started, when ctx ends,
// when a job failed and will be retried (after wait), and when the batch
// has run for BatchWindow (cut), so slow jobs are committed as they go
// rather than a whole batch later. An error means stop: with a stale token
// from the handler (its store saw a newer one), b holds the jobs finished
// before it and gives back that job and the rest, never counted as
// delivered; with any other (the lease is no longer valid), nothing is to
// be recorded.
func (w *Worker) runBatch(ctx context.Context, lease Lease, claimed []*entry, b *batch, log *slog.Logger) (wait time.Duration, cut bool, err error) {
	start := time.Now()
	for i, e := range claimed {
		if ctx.Err() != nil {
			b.unstarted = claimed[i:]
			return 0, false, nil
		}
		if i > 0 && time.Since(start) >= w.cfg.BatchWindow {
			b.unstarted = claimed[i:]
			return 0, true, nil
		}
		o, wait, err := w.handle(ctx, lease, e, log)
		if err != nil {
			b.unstarted = claimed[i:]
			return 0, false, err
		}
		if o == nil { // failed (to retry after wait) or interrupted
			b.started, b.unstarted = e, claimed[i+1:]
			return wait, false, nil
		}
		b.done = append(b.done, *o)
	}
	return 0, false, nil
}

// handle runs one delivery of e. It returns the outcome to record when
// the job finished (committed or dead-lettered), nil and the retry delay
// when it failed and will be delivered again (nil and 0 when leadership
// ended under it), or why to stop.
func (w *Worker) handle(ctx context.Context, lease Lease, e *entry, log *slog.Logger) (*outcome, time.Duration, error) {
	if e.job.Attempt > w.cfg.MaxAttempts {
		// Earlier deliveries started but never finished: their leaders
		// were lost mid-job. Do not let such a job loop across leaders.
		cause := fmt.Sprintf("jobs: %d deliveries started and none finished (leader lost mid-job each time)", e.job.Attempt-1)
		log.Error("job dead-lettered", "jobId", e.job.ID, "attempt", e.job.Attempt, "err", cause)
		return &outcome{e: e, attempts: e.job.Attempt - 1, cause: cause}, 0, nil
	}
	if !lease.Valid() {
		return nil, 0, ErrLeaseInvalid
	}
	debugOn := log.Enabled(ctx, slog.LevelDebug)
	var start time.Time
	if debugOn { // no attributes built per job unless they are logged
		start = time.Now()
		log.Debug("job started", "jobId", e.job.ID, "attempt", e.job.Attempt)
	}
	herr := w.run(ctx, e.job, lease, log)
	switch {
	case hostFault(herr) != nil && ctx.Err() == nil:
		// Not the job's failure: given back as never started.
		return nil, 0, fmt.Errorf("jobs: job %s: %w", e.job.ID, hostFault(herr))
	case herr != nil && errors.Is(herr, ErrStaleToken):
		// Not the job's failure: this leader is stale in its store's eyes.
		log.Warn("the job's store rejected this leader's token as stale: giving the leadership up; the job is not counted as failed",
			"jobId", e.job.ID, "attempt", e.job.Attempt, "err", herr)
		return nil, 0, fmt.Errorf("jobs: job %s: %w", e.job.ID, herr)
	case herr != nil && ctx.Err() != nil:
		// Leadership ended under the job: not the job's failure. The next
		// leader delivers it again.
		log.Info("job interrupted", "jobId", e.job.ID, "attempt", e.job.Attempt, "err", herr)
		return nil, 0, nil
	case !lease.Valid():
		log.Warn("lease no longer valid: not recording the job", "jobId", e.job.ID, "attempt", e.job.Attempt)
		return nil, 0, ErrLeaseInvalid
	case herr == nil:
		if debugOn {
			log.Debug("job done", "jobId", e.job.ID, "attempt", e.job.Attempt, "tookMs", time.Since(start).Milliseconds())
		}
		return &outcome{e: e, attempts: e.job.Attempt}, 0, nil
	case e.job.Attempt >= w.cfg.MaxAttempts || errors.Is(herr, ErrPermanent):
		log.Error("job dead-lettered", "jobId", e.job.ID, "attempt", e.job.Attempt, "err", herr)
		return &outcome{e: e, attempts: e.job.Attempt, cause: herr.Error()}, 0, nil
	default:
		wait := w.cfg.Backoff.Delay(e.job.Attempt)
		log.Warn("job failed, retrying", "jobId", e.job.ID, "attempt", e.job.Attempt,
			"maxAttempts", w.cfg.MaxAttempts, "retryInMs", wait.Milliseconds(), "err", herr)
		return nil, wait, nil
	}
}

// run calls the handler. A panic in it is a failed attempt of the job, not
// the end of the leader: it is logged once with its stack and returned as
// an error, so a job that always panics is retried and then dead-lettered
// like any failing job, and the queue moves on.
func (w *Worker) run(ctx context.Context, job Job, lease Lease, log *slog.Logger) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("handler panicked", "jobId", job.ID, "attempt", job.Attempt, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrHandlerPanicked, v)
		}
	}()
	return w.cfg.Handler.Handle(ctx, job, lease)
}
