package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockworker/lockworker/internal/notice"
	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// MaxPayload is the largest job payload Enqueue accepts, in bytes.
const MaxPayload = 1 << 20

// MaxBatch is the most jobs one EnqueueMany call adds, and MaxBatchBytes
// the most payload bytes. They keep one transaction short for Redis (it
// serves nobody else while it runs) and within the client's read and
// write timeouts, and bound what a request holds in memory.
const (
	MaxBatch      = 1000
	MaxBatchBytes = 8 << 20
)

// EnqueueMany's refusals of a whole batch; nothing of it was enqueued.
var (
	ErrNoJobs        = errors.New("jobs: no jobs to enqueue")
	ErrTooManyJobs   = fmt.Errorf("jobs: more than %d jobs in one batch", MaxBatch)
	ErrBatchTooLarge = fmt.Errorf("jobs: batch larger than %d bytes (8 MiB)", MaxBatchBytes)
)

// ErrOutcomeUnknown is part of an EnqueueMany error when Redis did not
// answer (a broken connection, a timeout): the batch may have been
// enqueued, whole, or not at all; never in part. Without it, Redis refused
// the batch and nothing of it was enqueued. Packages that cannot import
// jobs find it by its method, OutcomeUnknown() bool.
var ErrOutcomeUnknown error = outcomeUnknown{}

type outcomeUnknown struct{}

func (outcomeUnknown) Error() string        { return "jobs: the batch was enqueued whole or not at all" }
func (outcomeUnknown) OutcomeUnknown() bool { return true }

// BatchError refuses a batch because of one of its jobs (Index, from 0);
// nothing of the batch was enqueued. Err is ErrEmptyPayload or
// ErrPayloadTooLarge.
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	return "jobs: job " + strconv.Itoa(e.Index+1) + ": " + trim(e.Err)
}

// Unwrap makes errors.Is(err, ErrPayloadTooLarge) and the like hold.
func (e *BatchError) Unwrap() error { return e.Err }

// trim drops the package prefix of a wrapped jobs error, so a message
// names the package once.
func trim(err error) string { return strings.TrimPrefix(err.Error(), "jobs: ") }

// Enqueue appends a job to the tail of the queue and returns its ULID, and
// publishes the ID on EnqueuedChannel so an idle leader wakes at once.
// Anyone may call it; it needs no leadership. A payload must hold 1 to
// MaxPayload bytes (ErrEmptyPayload, ErrPayloadTooLarge). Only the append
// decides the result: a lost notice costs the leader one PollInterval,
// while reporting it as a failure would invite a second enqueue of the
// same job.
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	if err := checkPayload(payload); err != nil {
		return "", err
	}
	id := ulid.Make().String()
	var add *redis.StringCmd
	_, _ = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, q.xadd(id, payload, q.nowMillis()))
		notice.Publish(ctx, p, q.cfg.ShardedNotices, q.enqueued, id)
		return nil
	})
	if err := add.Err(); err != nil {
		return "", fmt.Errorf("jobs: enqueue: %w", err)
	}
	return id, nil
}

// EnqueueMany appends the payloads to the tail of the queue, in order, all
// or none, and returns their ULIDs in the same order (which is also their
// processing order); then it publishes one notice, the last ID.
//
// The batch is checked whole before anything is written: 1 to MaxBatch
// payloads of 1 to MaxPayload bytes each (BatchError names the first bad
// one), at most MaxBatchBytes in all. It is written as one MULTI/EXEC
// transaction, so no job of another producer lands between its jobs, and
// no leader sees a part of it. Redis does not roll a transaction back, but
// every command in it is an XADD with a fresh ID to the same stream, so
// they succeed or fail together: a wrong key type fails each of them, and
// a refusal before EXEC (out of memory, an ACL) discards them all.
//
// A batch of one is an Enqueue: one round trip instead of two.
//
// An error wrapping ErrOutcomeUnknown (no answer: the connection broke,
// a timeout) leaves the caller unable to tell whether the whole batch was
// added; it is never partly added. Any other error means none was.
func (q *Queue) EnqueueMany(ctx context.Context, payloads [][]byte) ([]string, error) {
	if err := checkBatch(payloads); err != nil {
		return nil, err
	}
	if len(payloads) == 1 { // all or none by itself
		id, err := q.Enqueue(ctx, payloads[0])
		if err != nil {
			return nil, err
		}
		return []string{id}, nil
	}
	ids := make([]string, len(payloads))
	now := q.nowMillis()
	_, err := q.cfg.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, payload := range payloads {
			ids[i] = ulid.Make().String() // monotonic: in order within the batch
			p.XAdd(ctx, q.xadd(ids[i], payload, now))
		}
		return nil
	})
	var refused redis.Error
	switch {
	case errors.As(err, &refused): // a reply: MULTI, a queued command or EXEC refused, so none ran
		return nil, fmt.Errorf("jobs: enqueue %d jobs: %w", len(payloads), err)
	case err != nil:
		return nil, fmt.Errorf("jobs: enqueue %d jobs: %w (%w)", len(payloads), err, ErrOutcomeUnknown)
	}
	// After EXEC, not inside it: a notice that cannot be sent (an ACL
	// without the channel) must not undo the batch, as in Enqueue.
	_ = notice.Publish(ctx, q.cfg.Client, q.cfg.ShardedNotices, q.enqueued, ids[len(ids)-1]).Err()
	return ids, nil
}

func (q *Queue) xadd(id string, payload []byte, now string) *redis.XAddArgs {
	return &redis.XAddArgs{
		Stream: q.stream,
		Values: []any{"id", id, "payload", payload, "enqueued_at", now},
	}
}

func checkPayload(payload []byte) error {
	switch {
	case len(payload) == 0:
		return ErrEmptyPayload
	case len(payload) > MaxPayload:
		return ErrPayloadTooLarge
	}
	return nil
}

func checkBatch(payloads [][]byte) error {
	switch {
	case len(payloads) == 0:
		return ErrNoJobs
	case len(payloads) > MaxBatch:
		return ErrTooManyJobs
	}
	total := 0
	for i, p := range payloads {
		if err := checkPayload(p); err != nil {
			return &BatchError{Index: i, Err: err}
		}
		if total += len(p); total > MaxBatchBytes {
			return ErrBatchTooLarge
		}
	}
	return nil
}

// EnqueuedChannel is the pub/sub channel Enqueue publishes new job IDs on;
// wire it to Worker.Notify (package notice).
func (q *Queue) EnqueuedChannel() string { return q.enqueued }
