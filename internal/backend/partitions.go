package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// CheckPartitions refuses a partition count (PARTITIONS) that is not
// the fleet's, with a *config.Error naming PARTITIONS and both counts:
// replicas that disagreed would put a key's jobs in different partitions,
// and two of them could lead one queue under different locks. The
// fleet's count is the one recorded on the first node, and the one the
// live replicas' registry records carry. When none is recorded, it
// records this one, unless replicas of this LOCK_KEY listen on its
// control channel with no record in the registry: a live fleet whose
// keys were flushed, whose records and count come back within one
// registry interval. Then it waits for them, up to one registry TTL
// (calling waiting once first, when not nil), and judges again. Each
// command is bounded by timeout; the wait, by ctx.
func (b *Backend) CheckPartitions(ctx context.Context, timeout time.Duration, waiting func(bound time.Duration)) error {
	first := true
	deadline := time.Now().Add(b.Roster.TTL())
	for {
		recorded, seen, err := b.fleetPartitions(ctx, timeout)
		switch {
		case err != nil:
			return err
		case recorded != 0 || seen || time.Now().After(deadline):
			return b.recordPartitions(ctx, timeout, recorded)
		}
		listening, err := b.fleetListening(ctx, timeout)
		if err != nil {
			return err
		}
		if !listening {
			return b.recordPartitions(ctx, timeout, 0)
		}
		if first && waiting != nil {
			waiting(time.Until(deadline))
		}
		first = false
		if !backoff.Sleep(ctx, partitionsPoll) {
			return fmt.Errorf("backend: waiting for the fleet's partition count: %w", context.Cause(ctx))
		}
	}
}

// partitionsPoll is how often CheckPartitions looks for a flushed
// fleet's count while it waits.
const partitionsPoll = 50 * time.Millisecond

// fleetPartitions reads the recorded count (0 when none) and refuses
// this one when it differs from it or from a live replica's; seen says
// the registry holds a live record with a count.
func (b *Backend) fleetPartitions(ctx context.Context, timeout time.Duration) (recorded int, seen bool, err error) {
	key := b.Keys.Partitions()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prev, err := b.Clients[0].Get(rctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return 0, false, fmt.Errorf("backend: read the recorded partition count %s: %w", key, err)
	default:
		if recorded, err = parseCount(key, prev); err != nil {
			return 0, false, err
		}
		if recorded != b.Partitions {
			return 0, false, b.otherCount(recorded, fmt.Sprintf("recorded in Redis at %s", key))
		}
	}
	records, err := b.Roster.List(rctx)
	if err != nil {
		return 0, false, fmt.Errorf("backend: read the fleet registry: %w", err)
	}
	var others []string
	other := 0
	for _, r := range records {
		switch {
		case r.PartitionCount == 0:
		case r.PartitionCount == b.Partitions:
			seen = true
		case other == 0 || r.PartitionCount == other:
			other = r.PartitionCount
			others = append(others, r.WorkerID)
		}
	}
	if other != 0 {
		return 0, false, b.otherCount(other, fmt.Sprintf("the live replicas %s say so in the fleet registry", strings.Join(others, ", ")))
	}
	return recorded, seen, nil
}

// recordPartitions records this count unless recorded (read before)
// already is, and refuses it when another was recorded meanwhile.
func (b *Backend) recordPartitions(ctx context.Context, timeout time.Duration, recorded int) error {
	if recorded != 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, _, err := b.RecordPartitions(rctx)
	if err != nil {
		return err
	}
	if got != b.Partitions {
		return b.otherCount(got, fmt.Sprintf("recorded in Redis at %s", b.Keys.Partitions()))
	}
	return nil
}

// RecordPartitions records this replica's partition count on the first
// node unless one is recorded, and returns the recorded count; now says
// it was recorded by this call (it had vanished: a flush, a Redis
// restarted empty, or the fleet's first start).
func (b *Backend) RecordPartitions(ctx context.Context) (recorded int, now bool, err error) {
	key := b.Keys.Partitions()
	prev, err := b.Clients[0].SetArgs(ctx, key, b.Partitions, redis.SetArgs{Mode: "NX", Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return b.Partitions, true, nil
	case err != nil:
		return 0, false, fmt.Errorf("backend: record the partition count %s: %w", key, err)
	}
	recorded, err = parseCount(key, prev)
	return recorded, false, err
}

func parseCount(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("backend: the recorded partition count %s holds %q, not a count", key, v)
	}
	return n, nil
}

// otherCount refuses this replica's count beside the fleet's, naming
// both.
func (b *Backend) otherCount(fleet int, where string) error {
	return &config.Error{Var: "PARTITIONS", Msg: fmt.Sprintf(
		"%d, but the fleet of this LOCK_KEY runs with %d (%s): set PARTITIONS=%d; "+
			"to change the count, drain the queue and re-partition (docs/operations.md, Re-partitioning)",
		b.Partitions, fleet, where, fleet)}
}

// fleetListening reports whether any client listens on this LOCK_KEY's
// control channel, as every running replica does: one that does is
// running even when its keys were flushed (a subscription outlives a
// FLUSHALL). In cluster mode the channel is sharded, on its slot's master.
func (b *Backend) fleetListening(ctx context.Context, timeout time.Duration) (bool, error) {
	ch := b.Keys.ControlChannel()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var n map[string]int64
	var err error
	if cc, ok := b.Clients[0].(*redis.ClusterClient); ok && b.sharded {
		var m *redis.Client
		if m, err = cc.MasterForKey(rctx, ch); err == nil {
			n, err = m.PubSubShardNumSub(rctx, ch).Result()
		}
	} else {
		n, err = b.Clients[0].PubSubNumSub(rctx, ch).Result()
	}
	if err != nil {
		return false, fmt.Errorf("backend: count the listeners of %s: %w", ch, err)
	}
	return n[ch] > 0, nil
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
