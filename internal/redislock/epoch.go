package redislock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// bumpEpoch bumps the epoch once for value on the epoch authority, raised
// to floor first; seen is the epoch it found. recorded
// says the authority is also a lock node holding value, and its lock value
// now carries the token (Holder takes the token from any node of the
// holder's quorum, for display only).
func (l *Locker) bumpEpoch(ctx context.Context, value string, floor int64) (token int64, recorded bool, seen int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	v, err := l.replicated(ctx, epochScript, l.epochKeys, []any{value, floor}, func([]int64) bool { return true })
	if err == nil && len(v) != 3 {
		err = fmt.Errorf("unexpected epoch reply of %d values", len(v))
	}
	if err != nil {
		return 0, false, 0, &NodeError{Node: "epoch authority", Err: err}
	}
	return v[0], v[1] == 1, v[2], nil
}

// recordToken writes the token into the lock value of the nodes that
// granted the lock, for Holder. Best effort: it is for people, not safety.
func (l *Locker) recordToken(ctx context.Context, idx []int, value string, token int64) {
	fanOut(ctx, l, idx, func(ctx context.Context, _ int, n redis.Scripter) (int64, error) {
		return setTokenScript.Run(ctx, n, l.lockKeys, value, token).Int64()
	})
}
