package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
)

// CheckPartitions records the fleet's partition count (PARTITIONS) on the
// first node when none is recorded yet, and refuses a count that differs
// from the recorded one: a *config.Error naming PARTITIONS, the recorded
// count, and the way to change it. Replicas that disagreed would put a
// key's jobs in different partitions, and two of them could lead one
// queue under different locks.
func (b *Backend) CheckPartitions(ctx context.Context) error {
	key := b.Keys.Partitions()
	prev, err := b.Clients[0].SetArgs(ctx, key, b.Partitions, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil // recorded now
	case err != nil:
		return fmt.Errorf("backend: read the recorded partition count %s: %w", key, err)
	}
	recorded, err := strconv.Atoi(prev)
	if err != nil || recorded < 1 {
		return fmt.Errorf("backend: the recorded partition count %s holds %q, not a count", key, prev)
	}
	if recorded == b.Partitions {
		return nil
	}
	return &config.Error{Var: "PARTITIONS", Msg: fmt.Sprintf(
		"%d, but the fleet of this LOCK_KEY runs with %d (recorded in Redis at %s): set PARTITIONS=%d; "+
			"to change the count, drain the queue and re-partition (docs/operations.md, Re-partitioning)",
		b.Partitions, recorded, key, recorded)}
}
