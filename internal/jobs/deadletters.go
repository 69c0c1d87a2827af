package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// DeadLetter is a job that failed MaxAttempts times.
type DeadLetter struct {
	Job
	// Error is the last attempt's error.
	Error string
	// Attempts is how many deliveries the job had.
	Attempts int
	// FailedAt is when it was dead-lettered.
	FailedAt time.Time
	// Token is the fencing token of the leader that dead-lettered it.
	Token int64
}

// DeadLetters returns up to n dead letters, most recent first; n <= 0
// returns all of them.
func (q *Queue) DeadLetters(ctx context.Context, n int64) ([]DeadLetter, error) {
	stop := n - 1
	if n <= 0 {
		stop = -1
	}
	ids, err := q.cfg.Client.ZRevRange(ctx, q.dead, 0, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: dead letters: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, q.deadRecord(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(ids))
	for _, c := range cmds {
		r := c.Val()
		if len(r) == 0 {
			continue // requeued between the two reads
		}
		attempts, _ := strconv.Atoi(r["attempts"])
		token, _ := strconv.ParseInt(r["token"], 10, 64)
		out = append(out, DeadLetter{
			Job: Job{
				ID:         r["id"],
				Payload:    []byte(r["payload"]),
				Attempt:    attempts,
				EnqueuedAt: millisTime(r["enqueued_at"]),
				Key:        r["key"],
				Partition:  q.cfg.Partition,
			},
			Error:    r["error"],
			Attempts: attempts,
			FailedAt: millisTime(r["failed_at"]),
			Token:    token,
		})
	}
	return out, nil
}

// Requeue moves the dead letter id back to the tail of the queue as a new
// job (new ID, attempts from 1, the same ordering key, so the same
// partition) and returns the new ID. It needs no
// leadership. ErrNotFound when id is not a dead letter.
func (q *Queue) Requeue(ctx context.Context, id string) (string, error) {
	newID := ulid.Make().String()
	err := requeueScript.Run(ctx, q.cfg.Client,
		[]string{q.dead, q.deadRecord(id), q.stream},
		id, newID, q.nowMillis()).Err()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, err)
	}
	return newID, nil
}
