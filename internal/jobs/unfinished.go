package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Unfinished lists every job of the queue that is in its group's order
// and not committed or dead-lettered yet (not the delayed jobs still
// waiting: Delayed), group by group, each group's jobs in their order (the
// order they run in); the groups by their first job's ID (enqueue
// order). It reads each group on its own: for inspection and tests, not
// for a hot path.
func (q *Queue) Unfinished(ctx context.Context) ([]Job, error) {
	var ready *redis.StringSliceCmd
	var inflight, parked *redis.StringSliceCmd
	_, err := q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		ready = p.ZRange(ctx, q.ready, 0, -1)
		inflight = p.HKeys(ctx, q.inflight)
		parked = p.HKeys(ctx, q.parked)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: unfinished jobs: %w", err)
	}
	members := slices.Concat(ready.Val(), inflight.Val(), parked.Val())
	lists := make([]*redis.StringSliceCmd, len(members))
	_, err = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range members {
			lists[i] = p.LRange(ctx, q.group(m), 0, -1)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: unfinished jobs: %w", err)
	}
	var groups [][]Job
	for _, l := range lists {
		var g []Job
		for _, e := range l.Val() {
			job, _, err := decodeEntry(e)
			if err != nil {
				return nil, err
			}
			job.Partition = q.cfg.Partition
			g = append(g, job)
		}
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b []Job) int { return cmp.Compare(a[0].ID, b[0].ID) })
	return slices.Concat(groups...), nil
}
