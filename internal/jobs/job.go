package jobs

import (
	"context"
	"time"
)

// Job is one delivery of an enqueued job to a handler.
type Job struct {
	// ID is the job's ULID, fixed at enqueue; handlers dedupe on it.
	ID string
	// Payload is what the producer enqueued, byte for byte.
	Payload []byte
	// Attempt is the 1-based number of this delivery. It counts deliveries
	// under every leader, so a job interrupted by a leader change comes
	// back with a higher Attempt.
	Attempt int
	// EnqueuedAt is when the job was enqueued (or requeued), by the
	// enqueuer's clock, to the millisecond.
	EnqueuedAt time.Time
	// Key is the job's ordering key, "" when it was enqueued without one.
	// Jobs of one key are processed one at a time in enqueue order.
	Key string
	// Partition is the partition whose queue holds the job (0 without
	// partitions).
	Partition int
	// DueAt is when a delayed job fell due (it joined its key's order
	// then, as if enqueued then), or a schedule's tick's scheduled time;
	// zero for a job enqueued to run at once.
	DueAt time.Time
	// Schedule names the schedule whose tick this job is (its tick's
	// time is DueAt); "" for other jobs.
	Schedule string

	idem string // the idempotency key it was enqueued with, if any
}

// Lease is what processing needs of leadership.
type Lease interface {
	// Token is the fencing token of this leadership.
	Token() int64
	// Deadline is when the lease ends unless renewed; it may move later.
	Deadline() time.Time
	// Valid reports whether the lease is still held by this process's
	// reckoning (its deadline has not passed).
	Valid() bool
}

// Handler does the work of a job. It runs under the leadership's context,
// which ends when leadership may have ended, and must return soon after;
// lease.Deadline says by when at the latest. Anything it writes outside
// Redis should carry lease.Token() (and be rejected by the store when a
// newer token has been seen) or be deduplicated by job.ID: a job can be
// delivered more than once. Returning an error that wraps ErrStaleToken
// tells the worker that this leader is stale: it records the jobs finished
// before this one, gives this one back uncounted (when the queue's own fence
// still admits the token) and ends the leadership. An error that wraps
// ErrPermanent dead-letters the job at once; any other error is a failure
// of this attempt, retried with backoff up to MaxAttempts.
type Handler interface {
	Handle(ctx context.Context, job Job, lease Lease) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job Job, lease Lease) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, job Job, lease Lease) error {
	return f(ctx, job, lease)
}

var _ Handler = HandlerFunc(nil)
