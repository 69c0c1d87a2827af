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
}

// Handler does the work of a job. It runs under a context that ends when
// leadership may have ended, and must return soon after. Anything it writes
// outside Redis should carry token (and be rejected by the store when a
// newer token has been seen) or be deduplicated by job.ID: a job can be
// delivered more than once. Returning an error that wraps ErrStaleToken
// tells the queue that this leader is stale; any other error is a failure
// of this attempt.
type Handler interface {
	Handle(ctx context.Context, job Job, token int64) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job Job, token int64) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, job Job, token int64) error {
	return f(ctx, job, token)
}

var _ Handler = HandlerFunc(nil)
