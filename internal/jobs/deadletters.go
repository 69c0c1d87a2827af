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

// DeadLetter is a job that left the queue without being committed: it
// failed for good under JOB_ON_FAILURE=dead-letter, or an operator
// skipped it (SkippedBy).
type DeadLetter struct {
	Job
	// Error is the last attempt's error.
	Error string
	// Attempts is how many deliveries the job had.
	Attempts int
	// FailedAt is when it was dead-lettered (or skipped).
	FailedAt time.Time
	// Token is the fencing token of the leader that dead-lettered it (for
	// a skipped job, the one that parked it).
	Token int64
	// SkippedBy says who skipped it (lockworker skip), "" when it was not
	// skipped; SkipReason why.
	SkippedBy, SkipReason string
	// RequeuedFrom is the dead letter this job was requeued from, if any.
	RequeuedFrom string
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
		if r := c.Val(); len(r) > 0 { // else requeued between the two reads
			out = append(out, q.deadLetter(r))
		}
	}
	return out, nil
}

// deadLetter decodes a dead-letter record (keyspace's J:dead:<id>).
func (q *Queue) deadLetter(r map[string]string) DeadLetter {
	job, from, err := decodeEntry(r["entry"])
	if err != nil {
		job = Job{ID: r["id"], Key: keyOf(r["member"])} // still listed, and requeue says what is wrong
	}
	attempts, _ := strconv.Atoi(r["attempts"])
	token, _ := strconv.ParseInt(r["token"], 10, 64)
	job.Attempt, job.Partition = attempts, q.cfg.Partition
	return DeadLetter{
		Job: job, Error: r["error"], Attempts: attempts, FailedAt: millisTime(r["failed_at"]), Token: token,
		SkippedBy: r["skipped_by"], SkipReason: r["reason"], RequeuedFrom: from,
	}
}

// Requeue moves the dead letter id back to the head of its group, before
// the group's other jobs (after its run in flight, if one is): replayed
// in order. It becomes a new job (new ID, attempts from 1, the same key,
// so the same partition), whose ID it returns. It needs no leadership.
// ErrNotFound when id is not a dead letter.
func (q *Queue) Requeue(ctx context.Context, id string) (string, error) {
	return q.requeue(ctx, id, "head")
}

// RequeueTail is Requeue to the tail of the group, after every job
// enqueued meanwhile: the key's order does not hold for it.
func (q *Queue) RequeueTail(ctx context.Context, id string) (string, error) {
	return q.requeue(ctx, id, "tail")
}

// requeueKeys is requeue.lua's KEYS for the dead letter id, in its
// header's order.
func (q *Queue) requeueKeys(id string) []string {
	return []string{q.dead, q.deadRecord(id), q.ready, q.inflight, q.counters}
}

func (q *Queue) requeue(ctx context.Context, id, where string) (string, error) {
	newID := ulid.Make().String()
	err := q.runNoticed(ctx, requeueScript, q.requeueKeys(id), []any{id, newID, q.nowMillis(), q.groups, where}, newID).Err()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, err)
	}
	return newID, nil
}
