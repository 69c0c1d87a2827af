package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DelayedJob is a delayed job that is not due yet: it waits apart from
// its key's jobs (keyspace's J:delayed) until DueAt, when the partition's
// leader moves it into its key's order.
type DelayedJob struct {
	ID           string    `json:"id"`
	Key          string    `json:"key"`
	Partition    int       `json:"partition"`
	DueAt        time.Time `json:"dueAt"`
	EnqueuedAt   time.Time `json:"enqueuedAt"`
	PayloadBytes int       `json:"payloadBytes"`
}

// Delayed lists up to n of the queue's delayed jobs, soonest due first
// (n <= 0: all of them).
func (q *Queue) Delayed(ctx context.Context, n int64) ([]DelayedJob, error) {
	stop := n - 1
	if n <= 0 {
		stop = -1
	}
	raw, err := q.cfg.Client.ZRange(ctx, q.delayed, 0, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: delayed jobs: %w", err)
	}
	out := make([]DelayedJob, 0, len(raw))
	for _, m := range raw {
		_, entry, _ := strings.Cut(m, "\n") // "<member>\n<entry>"
		job, _, err := decodeEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("jobs: delayed jobs: %w", err)
		}
		out = append(out, DelayedJob{ID: job.ID, Key: job.Key, Partition: q.cfg.Partition, DueAt: job.DueAt.UTC(),
			EnqueuedAt: job.EnqueuedAt.UTC(), PayloadBytes: len(job.Payload)})
	}
	return out, nil
}

// Delayed lists up to n delayed jobs of every partition, soonest due
// first (n <= 0: all of them).
func (r *Router) Delayed(ctx context.Context, n int64) ([]DelayedJob, error) {
	var all []DelayedJob
	for _, q := range r.queues {
		d, err := q.Delayed(ctx, n)
		if err != nil {
			return nil, err
		}
		all = append(all, d...)
	}
	slices.SortStableFunc(all, func(a, b DelayedJob) int { return a.DueAt.Compare(b.DueAt) })
	if n > 0 && int64(len(all)) > n {
		all = all[:n]
	}
	return all, nil
}
