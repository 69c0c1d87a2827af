package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs/figures"
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

// holderReads bounds the partitions' lock reads in flight at once.
const holderReads = 16

// PartitionTable reads every partition's owner from its lease (who holds
// its lock, with which token) and its queue's figures (one pipeline), by
// partition. Without partitions it is the one lock and queue. The leases
// and the queues are read side by side, not atomically: a handover
// between the two reads shows in neither as a mismatch.
func (b *Backend) PartitionTable(ctx context.Context) ([]figures.Partition, error) {
	out := make([]figures.Partition, b.Partitions)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(holderReads)
	for p, l := range b.Lockers {
		g.Go(func() error {
			h, err := l.Holder(gctx)
			if err != nil {
				return fmt.Errorf("read the lock of partition %d: %w", p, err)
			}
			out[p].Partition = p
			if h.Held {
				out[p].Owner, out[p].Token = h.WorkerID, h.Token
			}
			return nil
		})
	}
	stats, err := b.Queues.PartitionStats(ctx)
	if werr := g.Wait(); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, fmt.Errorf("read the queues: %w", err)
	}
	for p, q := range stats {
		out[p].Queue = q
	}
	return out, nil
}
