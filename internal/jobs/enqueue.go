package jobs

import (
	"context"
	"fmt"

	"github.com/lockworker/lockworker/internal/notice"
	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// MaxPayload is the largest job payload Enqueue accepts, in bytes.
const MaxPayload = 1 << 20

// Enqueue appends a job to the tail of the queue and returns its ULID, and
// publishes the ID on EnqueuedChannel so an idle leader wakes at once.
// Anyone may call it; it needs no leadership. A payload must hold 1 to
// MaxPayload bytes (ErrEmptyPayload, ErrPayloadTooLarge). Only the append
// decides the result: a lost notice costs the leader one PollInterval,
// while reporting it as a failure would invite a second enqueue of the
// same job.
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	switch {
	case len(payload) == 0:
		return "", ErrEmptyPayload
	case len(payload) > MaxPayload:
		return "", ErrPayloadTooLarge
	}
	id := ulid.Make().String()
	var add *redis.StringCmd
	_, _ = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{
			Stream: q.stream,
			Values: []any{"id", id, "payload", payload, "enqueued_at", q.nowMillis()},
		})
		notice.Publish(ctx, p, q.cfg.ShardedNotices, q.enqueued, id)
		return nil
	})
	if err := add.Err(); err != nil {
		return "", fmt.Errorf("jobs: enqueue: %w", err)
	}
	return id, nil
}

// EnqueuedChannel is the pub/sub channel Enqueue publishes new job IDs on;
// wire it to Worker.Notify (package notice).
func (q *Queue) EnqueuedChannel() string { return q.enqueued }
