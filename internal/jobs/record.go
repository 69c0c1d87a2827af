package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockworker/lockworker/internal/backoff"
)

// record runs a fenced write (commit or dead-letter), retrying Redis errors
// with backoff while the lease is valid. When ctx is already done but the
// lease is still valid (work stopped right as a job finished), it tries once
// under a context bounded by the lease deadline, so a finished job is not
// redone by the next leader.
func (w *Worker) record(ctx context.Context, lease Lease, e *entry, write func(context.Context) error) error {
	if ctx.Err() != nil {
		if !lease.Valid() {
			return nil
		}
		wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), lease.Deadline())
		defer cancel()
		if err := write(wctx); errors.Is(err, ErrStaleToken) || errors.Is(err, errOrder) {
			return err
		} else if err != nil {
			w.log.Warn("could not record a finished job while stopping; it will run again", "jobId", e.job.ID, "err", err)
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
		wait := w.cfg.Backoff.Delay(fails)
		w.log.Warn("could not record the job, retrying", "jobId", e.job.ID, "err", err, "retryInMs", wait.Milliseconds())
		if !backoff.Sleep(ctx, wait) {
			return nil
		}
		if !lease.Valid() {
			return ErrLeaseInvalid
		}
	}
}

// commit is the fenced completion of e. A resent commit that already
// applied returns nil.
func (q *Queue) commit(ctx context.Context, token int64, e *entry) error {
	reply, err := commitScript.Run(ctx, q.cfg.Client,
		[]string{q.fence, q.position, q.stream, q.attempts, q.counters, q.last},
		token, e.streamID, e.job.ID, e.job.Attempt, q.nowMillis()).Slice()
	return fencedResult("commit", e, token, reply, err)
}

// deadLetter is the fenced move of e to the dead letters with cause.
func (q *Queue) deadLetter(ctx context.Context, token int64, e *entry, attempts int, cause string) error {
	reply, err := deadLetterScript.Run(ctx, q.cfg.Client,
		[]string{q.fence, q.position, q.stream, q.attempts, q.counters, q.dead, q.deadRecord(e.job.ID)},
		token, e.streamID, e.job.ID, attempts, q.nowMillis(), cause).Slice()
	return fencedResult("dead-letter", e, token, reply, err)
}

func fencedResult(op string, e *entry, token int64, reply []any, err error) error {
	if err != nil {
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, err)
	}
	tag, rest, err := splitReply(reply)
	if err != nil {
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, err)
	}
	switch tag {
	case "ok", "done":
		return nil
	case "stale":
		return fmt.Errorf("jobs: %s %s: %w", op, e.job.ID, staleError(token, rest))
	case "order":
		pos := ""
		if len(rest) > 0 {
			pos = str(rest[0])
		}
		return fmt.Errorf("%w: %s of %s (stream ID %s) with committed position %s",
			errOrder, op, e.job.ID, e.streamID, pos)
	}
	return fmt.Errorf("jobs: %s %s: unexpected reply %q", op, e.job.ID, tag)
}
