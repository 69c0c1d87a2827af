package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Release deletes the lock on every node where it still holds this lease's
// value (compare-and-delete, in parallel) and publishes the worker ID on
// the release channel (keyspace.Lease.ReleasedChannel). The lease is no
// longer valid afterwards, whatever the outcome. A node where the key is
// missing or foreign is fine (a re-sent release may report 0 after it did
// delete); only node errors are returned, joined.
func (l *Locker) Release(ctx context.Context, lease *Lease) error {
	if lease == nil {
		return nil
	}
	lease.setDeadline(time.Time{})
	if err := l.release(ctx, nil, lease.value, lease.workerID, true); err != nil {
		return fmt.Errorf("redislock: release: %w", err)
	}
	return nil
}

func (l *Locker) release(ctx context.Context, idx []int, value, workerID string, notify bool) error {
	ch := ""
	if notify {
		ch = l.keys.ReleasedChannel()
	}
	res := fanOut(ctx, l, idx, func(ctx context.Context, _ int, n redis.Scripter) (int64, error) {
		return releaseScript.Run(ctx, n, l.lockKeys, value, ch, workerID, flag(l.sharded)).Int64()
	})
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, l.nodeErr(i, r.err))
		}
	}
	return errors.Join(errs...)
}
