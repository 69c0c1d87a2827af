package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// runResult is what a run leaves the loop: its outcome, to record, and
// what the loop must know beyond it.
type runResult struct {
	outcome
	// key is the group's key ("" for a keyless group), for the logs.
	key string
	// committed is how many of the popped jobs are committed, once the
	// outcome is recorded.
	committed int
	// hostFault: the head could not start, the host is out of resources
	// (given back uncounted; the loop says when it may run again).
	hostFault error
	// stop: processing must end (the lease is no longer valid; the
	// store found the token stale).
	stop error
}

// finishedIdem notes job, popped, for its idempotency key to expire.
func (r *runResult) finishedIdem(job Job) {
	if job.idem != "" {
		r.idem = append(r.idem, idemRef{key: job.idem, id: job.ID})
	}
}

// givenBack is the result of claim c when none of its jobs started: its
// group keeps its place, and a head's delivery its claim counted is
// taken back.
func givenBack(c claim) runResult {
	return runResult{outcome: outcome{member: c.member, first: c.jobs[0].ID, end: endDone, uncount: c.jobs[0].Attempt > 1},
		key: keyOf(c.member)}
}

// execute runs one claimed run: its jobs one at a time, in order. It ends
// after the last, at a job that did not finish (failed, interrupted,
// refused), once BatchWindow has passed (the rest is given back, so slow
// jobs are committed as they go), or when ctx ends.
func (w *Worker) execute(ctx context.Context, lease Lease, c claim, log *slog.Logger) runResult {
	r := runResult{outcome: outcome{member: c.member, first: c.jobs[0].ID, end: endDone}, key: keyOf(c.member)}
	start := time.Now()
	for i, job := range c.jobs {
		if ctx.Err() != nil || i > 0 && time.Since(start) >= w.cfg.BatchWindow {
			break // the rest goes back, never started
		}
		if !w.deliver(ctx, lease, job, &r, log) {
			break
		}
	}
	if r.popped == 0 && r.end == endDone && c.jobs[0].Attempt > 1 {
		r.uncount = true // the head never ran: its claim counted a delivery
	}
	return r
}

// deliver runs one delivery of job, the head of what is left of r's
// group, and notes in r how it ended; false when the run ends with it.
func (w *Worker) deliver(ctx context.Context, lease Lease, job Job, r *runResult, log *slog.Logger) bool {
	if job.Attempt > w.cfg.MaxAttempts {
		// Earlier deliveries started but never finished: their leaders
		// were lost mid-job. Do not let such a job loop across leaders.
		cause := fmt.Sprintf("jobs: %d deliveries started and none finished (leader lost mid-job each time)", job.Attempt-1)
		return w.failed(job, job.Attempt-1, cause, r, log)
	}
	if !lease.Valid() {
		log.Warn("lease no longer valid: not starting the job", "jobId", job.ID, "reason", invalidReason(lease))
		r.stop = ErrLeaseInvalid
		return false
	}
	var start time.Time
	if log.Enabled(ctx, slog.LevelDebug) { // no attributes built per job unless they are logged
		start = time.Now()
		log.Debug("job started", "jobId", job.ID, "key", r.key, "attempt", job.Attempt)
	}
	return w.after(ctx, lease, job, w.run(ctx, job, lease, log), start, r, log)
}

// after notes in r how job's delivery ended, with herr from its handler;
// false when the run ends with it.
func (w *Worker) after(ctx context.Context, lease Lease, job Job, herr error, start time.Time, r *runResult, log *slog.Logger) bool {
	switch {
	case hostFault(herr) != nil && ctx.Err() == nil:
		// Not the job's failure: given back as never started.
		r.hostFault = fmt.Errorf("jobs: job %s: %w", job.ID, hostFault(herr))
		r.uncount = r.popped == 0 && job.Attempt > 1
		return false
	case herr != nil && errors.Is(herr, ErrStaleToken):
		w.staleStore(job, herr, r, log)
		return false
	case herr != nil && (ctx.Err() != nil || errors.Is(herr, ErrLeaseEnding)):
		// Leadership ended (or is about to) under the job: not the job's
		// failure. The next leader delivers it again.
		log.Info("job interrupted", "jobId", job.ID, "key", r.key, "attempt", job.Attempt, "err", herr)
		r.end, r.head = endInterrupted, job.ID
		if ctx.Err() == nil {
			r.stop = fmt.Errorf("%w: %w", ErrLeaseInvalid, herr)
		}
		return false
	case !lease.Valid():
		log.Warn("lease no longer valid: not recording the job", "jobId", job.ID, "attempt", job.Attempt, "reason", invalidReason(lease))
		r.stop = ErrLeaseInvalid
		return false
	case herr == nil:
		if !start.IsZero() {
			log.Debug("job done", "jobId", job.ID, "attempt", job.Attempt, "tookMs", time.Since(start).Milliseconds())
		}
		r.popped++
		r.committed++
		r.last, r.lastAttempts = job.ID, job.Attempt
		r.finishedIdem(job)
		return true
	case job.Attempt >= w.cfg.MaxAttempts || errors.Is(herr, ErrPermanent):
		return w.failed(job, job.Attempt, herr.Error(), r, log)
	}
	w.retry(ctx, job, herr, r, log)
	return false
}

// staleStore ends r at job, whose store found the token stale: not the job's
// failure, but this leader is stale in its store's eyes. The job is
// given back uncounted; the leadership ends.
func (w *Worker) staleStore(job Job, herr error, r *runResult, log *slog.Logger) {
	log.Warn("the job's store rejected this leader's token as stale: giving the leadership up; the job is not counted as failed",
		"jobId", job.ID, "key", r.key, "attempt", job.Attempt, "err", herr)
	r.end, r.head, r.uncount = endStale, job.ID, r.popped == 0 && job.Attempt > 1
	r.cause = fmt.Sprintf("jobs: its store refused the token of %d leaderships in a row: lockworker epoch --raise-to N (above the store's fence), "+
		"then lockworker retry; the store's fence is above this lock's epoch (a restored backup, a Redis that lost its data?): %v", staleLeaderships, herr)
	r.stop = fmt.Errorf("jobs: job %s: %w", job.ID, herr)
}

// retry ends r at job, which failed with herr: its group waits, alone.
func (w *Worker) retry(ctx context.Context, job Job, herr error, r *runResult, log *slog.Logger) {
	wait := w.retryDelay(job.Attempt, herr)
	r.end, r.head, r.attempts, r.due = endRetry, job.ID, job.Attempt, time.Now().Add(wait)
	level := slog.LevelDebug
	if job.Attempt == 1 {
		level = slog.LevelWarn // once per failing job, not per retry
	}
	log.Log(ctx, level, "job failed; its key waits and retries", "jobId", job.ID, "key", r.key, "attempt", job.Attempt,
		"maxAttempts", w.cfg.MaxAttempts, "retryInMs", wait.Milliseconds(), "err", herr)
}

// failed ends job for good after attempts deliveries: its group is
// parked (the run ends), or it is dead-lettered and the run goes on.
func (w *Worker) failed(job Job, attempts int, cause string, r *runResult, log *slog.Logger) bool {
	if w.cfg.OnFailure == FailureDeadLetter {
		log.Error("job dead-lettered", "jobId", job.ID, "key", r.key, "attempts", attempts, "err", cause)
		r.dead = append(r.dead, deadJob{index: r.popped, attempts: attempts, cause: cause})
		r.popped++
		r.finishedIdem(job)
		return true
	}
	log.Warn("key parked: it holds its jobs until lockworker retry or skip", "key", r.key, "partition", job.Partition,
		"jobId", job.ID, "attempts", attempts, "err", cause)
	r.end, r.head, r.attempts, r.cause = endPark, job.ID, attempts, cause
	return false
}

// retryDelay is how long a job's group waits after its attempt-th
// delivery failed with err: what the answer asked (RetryAfter), or the
// Retry policy's step, never more than its Max.
func (w *Worker) retryDelay(attempt int, err error) time.Duration {
	if d, ok := RetryAfter(err); ok {
		return min(d, w.cfg.Retry.Max)
	}
	return w.cfg.Retry.Delay(attempt)
}

// RetryAfter is the wait a handler's error asks for before the next
// attempt (an HTTP 429 or 503 answer's Retry-After): an error in its
// chain with a RetryAfter() (time.Duration, bool) method that says so.
func RetryAfter(err error) (time.Duration, bool) {
	var h interface{ RetryAfter() (time.Duration, bool) }
	if errors.As(err, &h) {
		return h.RetryAfter()
	}
	return 0, false
}

// invalidReason says why lease is no longer valid, for the log.
func invalidReason(lease Lease) string {
	if late := time.Since(lease.Deadline()); late >= 0 {
		return fmt.Sprintf("its local deadline passed %dms ago", late.Milliseconds())
	}
	return "its holder gave it up"
}

// run calls the handler. A panic in it is a failed attempt of the job, not
// the end of the leader: it is logged once with its stack and returned as
// an error, so a job that always panics is retried and then fails for
// good like any failing job.
func (w *Worker) run(ctx context.Context, job Job, lease Lease, log *slog.Logger) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("handler panicked", "jobId", job.ID, "attempt", job.Attempt, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrHandlerPanicked, v)
		}
	}()
	return w.cfg.Handler.Handle(ctx, job, lease)
}
