package jobs

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Pause stops the leader from claiming new jobs, fleet-wide, until Resume;
// the runs in flight finish. Pausing a paused queue changes nothing but
// the flag's time. It needs no leadership.
func (q *Queue) Pause(ctx context.Context) error {
	if err := q.cfg.Client.Set(ctx, q.paused, q.nowMillis(), 0).Err(); err != nil {
		return fmt.Errorf("jobs: pause: %w", err)
	}
	return nil
}

// Resume lifts a Pause and wakes an idle leader (on EnqueuedChannel), in
// one round trip. Resuming a running queue is not an error.
func (q *Queue) Resume(ctx context.Context) error {
	var del *redis.IntCmd
	_, _ = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, q.paused)
		if !q.noticeAfter {
			p.Do(ctx, q.notice("resume")...)
		}
		return nil
	})
	if err := del.Err(); err != nil {
		return fmt.Errorf("jobs: resume: %w", err)
	}
	if q.noticeAfter {
		_ = q.publish(ctx, q.cfg.Client, "resume")
	}
	return nil
}
