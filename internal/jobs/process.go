package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Lease is what the leader loop needs of leadership.
type Lease interface {
	// Token is the fencing token of this leadership.
	Token() int64
	// Deadline is when the lease ends unless renewed; it may move later.
	Deadline() time.Time
	// Valid reports whether the lease is still held by this process's
	// reckoning (its deadline has not passed).
	Valid() bool
}

// Process is the leader's loop. It takes the job after the last committed
// one, runs the handler, and commits (or, after MaxAttempts failures,
// dead-letters) it with a fenced script, one job at a time, in enqueue
// order. It returns nil once ctx is done, ErrLeaseInvalid when the lease
// stops being valid first, and an error wrapping ErrStaleToken when Redis
// says a newer leader exists. Redis errors are logged and retried with
// backoff, never returned.
//
// Each job runs under a child of ctx that is also cancelled once the lease's
// deadline passes; a renewal that moves the deadline later keeps the job
// running.
func (q *Queue) Process(ctx context.Context, lease Lease) error {
	if lease == nil {
		return errors.New("jobs: Process needs a lease")
	}
	token := lease.Token()
	log := q.log.With("token", token)
	log.Info("processing jobs")
	redisFails := 0
	for {
		if ctx.Err() != nil {
			return nil
		}
		if !lease.Valid() {
			log.Warn("lease no longer valid: taking no more jobs")
			return ErrLeaseInvalid
		}
		e, err := q.claim(ctx, token)
		if errors.Is(err, ErrStaleToken) {
			log.Warn("a newer leader exists: stopping", "err", err)
			return err
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			redisFails++
			wait := q.backoff(redisFails)
			log.Warn("could not read the queue, retrying", "err", err, "retry_in", wait.Round(time.Millisecond).String())
			q.sleep(ctx, wait)
			continue
		}
		redisFails = 0
		if e == nil {
			q.idle(ctx)
			continue
		}
		if err := q.handle(ctx, lease, e, log); err != nil {
			return err
		}
	}
}

// handle runs one delivery of e and records its outcome. It returns nil to
// go on (also after a failure that will be retried), or why to stop.
func (q *Queue) handle(ctx context.Context, lease Lease, e *entry, log *slog.Logger) error {
	token := lease.Token()
	if e.job.Attempt > q.cfg.MaxAttempts {
		// Earlier deliveries started but never finished: their leaders
		// were lost mid-job. Do not let such a job loop across leaders.
		cause := fmt.Sprintf("jobs: %d deliveries started and none finished (leader lost mid-job each time)", e.job.Attempt-1)
		log.Error("job dead-lettered", "jobId", e.job.ID, "attempts", e.job.Attempt-1, "err", cause)
		return q.record(ctx, lease, e, func(ctx context.Context) error {
			return q.deadLetter(ctx, token, e, e.job.Attempt-1, cause)
		})
	}
	if !lease.Valid() {
		return ErrLeaseInvalid
	}
	jctx, stop := leaseContext(ctx, lease)
	log.Debug("job started", "jobId", e.job.ID, "attempt", e.job.Attempt)
	start := time.Now()
	herr := q.cfg.Handler.Handle(jctx, e.job, token)
	interrupted := jctx.Err() != nil
	stop()
	switch {
	case herr != nil && errors.Is(herr, ErrStaleToken):
		log.Warn("handler reports a newer leader: stopping", "jobId", e.job.ID, "err", herr)
		return fmt.Errorf("jobs: job %s: %w", e.job.ID, herr)
	case herr != nil && interrupted:
		// Leadership ended under the job: not the job's failure. The next
		// leader delivers it again.
		log.Info("job interrupted", "jobId", e.job.ID, "attempt", e.job.Attempt, "err", herr)
		return q.stopReason(ctx, lease)
	case !lease.Valid():
		log.Warn("lease no longer valid: not recording the job", "jobId", e.job.ID)
		return ErrLeaseInvalid
	case herr == nil:
		log.Debug("job done", "jobId", e.job.ID, "attempt", e.job.Attempt,
			"took_ms", time.Since(start).Milliseconds())
		return q.record(ctx, lease, e, func(ctx context.Context) error { return q.commit(ctx, token, e) })
	case e.job.Attempt >= q.cfg.MaxAttempts:
		log.Error("job dead-lettered", "jobId", e.job.ID, "attempts", e.job.Attempt, "err", herr)
		return q.record(ctx, lease, e, func(ctx context.Context) error {
			return q.deadLetter(ctx, token, e, e.job.Attempt, herr.Error())
		})
	default:
		wait := q.backoff(e.job.Attempt)
		log.Warn("job failed, retrying", "jobId", e.job.ID, "attempt", e.job.Attempt,
			"maxAttempts", q.cfg.MaxAttempts, "retry_in", wait.Round(time.Millisecond).String(), "err", herr)
		q.sleep(ctx, wait) // the next claim delivers the same job again
		return nil
	}
}

// record runs a fenced write (commit or dead-letter), retrying Redis errors
// with backoff while the lease is valid. When ctx is already done but the
// lease is still valid (work stopped right as a job finished), it tries once
// under a context bounded by the lease deadline, so a finished job is not
// redone by the next leader.
func (q *Queue) record(ctx context.Context, lease Lease, e *entry, write func(context.Context) error) error {
	if ctx.Err() != nil {
		if !lease.Valid() {
			return nil
		}
		wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), lease.Deadline())
		defer cancel()
		if err := write(wctx); errors.Is(err, ErrStaleToken) || errors.Is(err, errOrder) {
			return err
		} else if err != nil {
			q.log.Warn("could not record a finished job while stopping; it will run again", "jobId", e.job.ID, "err", err)
		}
		return nil
	}
	for fails := 1; ; fails++ {
		err := write(ctx)
		if err == nil || errors.Is(err, ErrStaleToken) || errors.Is(err, errOrder) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := q.backoff(fails)
		q.log.Warn("could not record the job, retrying", "jobId", e.job.ID, "err", err, "retry_in", wait.Round(time.Millisecond).String())
		q.sleep(ctx, wait)
		if ctx.Err() != nil {
			return nil
		}
		if !lease.Valid() {
			return ErrLeaseInvalid
		}
	}
}

func (q *Queue) stopReason(ctx context.Context, lease Lease) error {
	if ctx.Err() != nil {
		return nil
	}
	if !lease.Valid() {
		return ErrLeaseInvalid
	}
	return nil
}

// backoff is the wait before try n+1: BackoffBase doubled n-1 times, capped
// at BackoffMax, with jitter.
func (q *Queue) backoff(n int) time.Duration {
	d := q.cfg.BackoffBase
	for i := 1; i < n && d < q.cfg.BackoffMax; i++ {
		d *= 2
	}
	return jitter(min(d, q.cfg.BackoffMax))
}

// jitter returns a duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// idle waits for an enqueue notice, the next poll, or the end of ctx.
func (q *Queue) idle(ctx context.Context) {
	t := time.NewTimer(jitter(q.cfg.PollInterval))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-q.wake:
	}
}

// sleep waits for d or until ctx is done.
func (q *Queue) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// leaseContext returns a child of ctx that is also cancelled (with cause
// ErrLeaseInvalid) once lease's deadline passes or lease turns invalid. The
// deadline is read again when it comes, so a renewed lease keeps the job
// running: a job may outlast one lease period, never the lease.
func leaseContext(ctx context.Context, lease Lease) (context.Context, context.CancelFunc) {
	jctx, cancel := context.WithCancelCause(ctx)
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	var check func()
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		left := time.Until(lease.Deadline())
		if left <= 0 || !lease.Valid() {
			cancel(ErrLeaseInvalid)
			return
		}
		timer = time.AfterFunc(left, check)
	}
	check()
	return jctx, func() {
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}
