package redislock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Renew extends the lease on a quorum with compare-and-pexpire; it never
// creates a missing key. On success the lease's deadline becomes the start
// of this renew + TTL - drift. It returns ErrLost (without touching Redis)
// when the local deadline already passed, and ErrLost when too many nodes
// say the key is missing or not ours for a quorum to remain. When nodes
// only failed or timed out it returns their errors joined, not ErrLost:
// the caller may retry while the deadline is ahead. A failed renew never
// moves the deadline.
func (l *Locker) Renew(ctx context.Context, lease *Lease) error {
	if lease == nil {
		return fmt.Errorf("%w: no lease", ErrLost)
	}
	start := l.now()
	if !start.Before(lease.Deadline()) {
		return fmt.Errorf("%w: local deadline passed", ErrLost)
	}
	res := fanOut(ctx, l, nil, func(ctx context.Context, _ int, n redis.Scripter) (int64, error) {
		return renewScript.Run(ctx, n, l.lockKeys, lease.value, l.ttlArg).Int64()
	})
	var ok, notMine int
	var errs []error
	for i, r := range res {
		switch {
		case r.err != nil:
			errs = append(errs, l.nodeErr(i, r.err))
		case r.v == 1:
			ok++
		default:
			notMine++
			errs = append(errs, l.nodeErr(i, errNotHeld))
		}
	}
	return l.renewed(lease, start, l.now(), ok, notMine, errs)
}
