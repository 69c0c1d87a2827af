package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// Stats reads the queue's counters and lengths in one atomic round trip.
func (q *Queue) Stats(ctx context.Context) (figures.Queue, error) {
	var read func() (figures.Queue, error)
	_, err := q.cfg.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		read = q.stats(ctx, p)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return figures.Queue{}, fmt.Errorf("jobs: stats: %w", err)
	}
	return read()
}

// stats queues the reads of Stats on p; read decodes them once p ran.
func (q *Queue) stats(ctx context.Context, p redis.Pipeliner) (read func() (figures.Queue, error)) {
	pending := p.XLen(ctx, q.stream)
	committed := p.HGet(ctx, q.counters, "committed")
	dead := p.ZCard(ctx, q.dead)
	epoch := p.Get(ctx, q.epoch)
	paused := p.Exists(ctx, q.paused)
	oldest := p.XRangeN(ctx, q.stream, "-", "+", 1)
	now := p.Time(ctx)
	return func() (figures.Queue, error) {
		for _, c := range []redis.Cmder{pending, dead, paused, oldest, now} {
			if err := c.Err(); err != nil {
				return figures.Queue{}, fmt.Errorf("jobs: stats: %w", err)
			}
		}
		s := figures.Queue{Pending: pending.Val(), DeadLettered: dead.Val(), Paused: paused.Val() > 0}
		if msgs := oldest.Val(); len(msgs) > 0 {
			waited := max(0, now.Val().Sub(streamIDTime(msgs[0].ID)))
			s.OldestPendingMs = int64((waited + time.Millisecond - 1) / time.Millisecond)
		}
		var err error
		if s.Committed, err = optInt(committed); err != nil {
			return figures.Queue{}, fmt.Errorf("jobs: stats: committed counter: %w", err)
		}
		if s.Epoch, err = optInt(epoch); err != nil {
			return figures.Queue{}, fmt.Errorf("jobs: stats: epoch key %s: %w", q.epoch, err)
		}
		return s, nil
	}
}

// streamIDTime is when Redis added a stream entry: the milliseconds part
// of its ID (XADD *, the server's clock).
func streamIDTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// optInt parses an integer reply that may be nil (0 then).
func optInt(c *redis.StringCmd) (int64, error) {
	if errors.Is(c.Err(), redis.Nil) {
		return 0, nil
	}
	if c.Err() != nil {
		return 0, c.Err()
	}
	return strconv.ParseInt(c.Val(), 10, 64)
}
