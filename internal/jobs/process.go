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

// Process is the leader's loop. It takes the job after the last committed
// one, runs the handler, and commits (or, after MaxAttempts failures,
// dead-letters) it with a fenced script, one job at a time, in enqueue
// order. It returns nil once ctx is done, ErrLeaseInvalid when the lease
// stops being valid first, and an error wrapping ErrStaleToken when Redis
// says a newer leader exists. Redis errors are logged and retried with
// backoff, never returned.
//
// ctx is the leadership's context: its owner (package leader) cancels it
// when the lease's deadline passes, and jobs run under it. Process itself
// only checks lease.Valid before each job and before each fenced write.
func (w *Worker) Process(ctx context.Context, lease Lease) error {
	if lease == nil {
		return errors.New("jobs: Process needs a lease")
	}
	token := lease.Token()
	log := w.log.With("token", token)
	log.Info("processing jobs")
	redisFails, paused := 0, false
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !lease.Valid() {
			log.Warn("lease no longer valid: taking no more jobs")
			return ErrLeaseInvalid
		}
		e, err := w.q.claim(ctx, token)
		if errors.Is(err, ErrStaleToken) {
			return err
		}
		if paused = pausedNow(paused, err, log); paused {
			w.idle(ctx) // Resume wakes it
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			redisFails++
			wait := w.cfg.Backoff.Delay(redisFails)
			log.Warn("could not read the queue, retrying", "err", err, "retryInMs", wait.Milliseconds())
			backoff.Sleep(ctx, wait)
			continue
		}
		redisFails = 0
		if e == nil {
			w.idle(ctx)
			continue
		}
		if err := w.handle(ctx, lease, e, log); errors.Is(err, errOrder) {
			// The store went back: a Redis failover lost the last writes
			// (async replication). Its position is the truth: resume from
			// it; the jobs whose commits were lost run again.
			log.Warn("the queue's committed position is behind this leader's last commit (writes lost in a Redis failover?); resuming from it", "err", err)
		} else if err != nil {
			return err
		}
	}
}

// pausedNow is whether the queue is paused after a claim that returned
// err: it becomes paused on errPaused and running again on a claim that
// succeeded (a Redis error says neither). A change is logged.
func pausedNow(paused bool, err error, log *slog.Logger) bool {
	switch {
	case errors.Is(err, errPaused) && !paused:
		log.Info("queue paused: taking no new job")
		return true
	case err == nil && paused:
		log.Info("queue resumed")
		return false
	}
	return paused
}

// handle runs one delivery of e and records its outcome. It returns nil to
// go on (also after a failure that will be retried), or why to stop.
func (w *Worker) handle(ctx context.Context, lease Lease, e *entry, log *slog.Logger) error {
	token := lease.Token()
	log = log.With("jobId", e.job.ID, "attempt", e.job.Attempt)
	if e.job.Attempt > w.cfg.MaxAttempts {
		// Earlier deliveries started but never finished: their leaders
		// were lost mid-job. Do not let such a job loop across leaders.
		cause := fmt.Sprintf("jobs: %d deliveries started and none finished (leader lost mid-job each time)", e.job.Attempt-1)
		log.Error("job dead-lettered", "err", cause)
		return w.record(ctx, lease, e, func(ctx context.Context) error {
			return w.q.deadLetter(ctx, token, e, e.job.Attempt-1, cause)
		})
	}
	if !lease.Valid() {
		return ErrLeaseInvalid
	}
	log.Debug("job started")
	start := time.Now()
	herr := w.run(ctx, e.job, lease, log)
	switch {
	case herr != nil && errors.Is(herr, ErrStaleToken):
		return fmt.Errorf("jobs: job %s: %w", e.job.ID, herr)
	case herr != nil && ctx.Err() != nil:
		// Leadership ended under the job: not the job's failure. The next
		// leader delivers it again.
		log.Info("job interrupted", "err", herr)
		return nil
	case !lease.Valid():
		log.Warn("lease no longer valid: not recording the job")
		return ErrLeaseInvalid
	case herr == nil:
		log.Debug("job done", "tookMs", time.Since(start).Milliseconds())
		var committed bool
		err := w.record(ctx, lease, e, func(ctx context.Context) error {
			err := w.q.commit(ctx, token, e)
			committed = err == nil
			return err
		})
		if committed {
			w.done.Add(1)
		}
		return err
	case e.job.Attempt >= w.cfg.MaxAttempts:
		log.Error("job dead-lettered", "err", herr)
		return w.record(ctx, lease, e, func(ctx context.Context) error {
			return w.q.deadLetter(ctx, token, e, e.job.Attempt, herr.Error())
		})
	default:
		wait := w.cfg.Backoff.Delay(e.job.Attempt)
		log.Warn("job failed, retrying", "maxAttempts", w.cfg.MaxAttempts, "retryInMs", wait.Milliseconds(), "err", herr)
		backoff.Sleep(ctx, wait) // the next claim delivers the same job again
		return nil
	}
}

// run calls the handler. A panic in it is a failed attempt of the job, not
// the end of the leader: it is logged once with its stack and returned as
// an error, so a job that always panics is retried and then dead-lettered
// like any failing job, and the queue moves on.
func (w *Worker) run(ctx context.Context, job Job, lease Lease, log *slog.Logger) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("handler panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrHandlerPanicked, v)
		}
	}()
	return w.cfg.Handler.Handle(ctx, job, lease)
}
