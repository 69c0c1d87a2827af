package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/partition"
)

// Router enqueues into the queues of a fleet's partitions: a job's
// ordering key picks its partition (partition.Of), so every job of a key
// lands in one queue, in one group, and runs in enqueue order; a job
// without a key goes to the partition its ID picks (spread, in no order
// with other jobs). With one queue it is that queue, and its keyless jobs
// form one group (Config.Partitions).
type Router struct {
	queues []*Queue
	client redis.Cmdable
	// oneTx: a batch spanning partitions is one script call (not Redis
	// Cluster, whose transactions stay in one slot).
	oneTx bool
}

// NewRouter routes to queues, by partition; they must share client (the
// Redis that holds every queue). With oneTx false (Redis Cluster, where a
// script stays in one slot), EnqueueMany is all or none per partition
// only.
func NewRouter(queues []*Queue, client redis.Cmdable, oneTx bool) (*Router, error) {
	if len(queues) == 0 || len(queues) > partition.Max {
		return nil, fmt.Errorf("jobs: a Router needs 1 to %d queues, got %d", partition.Max, len(queues))
	}
	if client == nil {
		return nil, errors.New("jobs: a Router needs the queues' client")
	}
	return &Router{queues: queues, client: client, oneTx: oneTx}, nil
}

// Queues are the partitions' queues, by partition.
func (r *Router) Queues() []*Queue { return r.queues }

// Partition is the partition of a job with ordering key key, or, without
// one, with ID id.
func (r *Router) Partition(key, id string) int {
	if key == "" {
		key = id
	}
	return partition.Of(key, len(r.queues))
}

// partitionOf is the partition of item it with ID id: its key's, or
// without one its idempotency key's (so an idempotent enqueue sent twice
// meets itself in one partition), or its ID's.
func (r *Router) partitionOf(it Item, id string) int {
	return r.Partition(cmp.Or(it.Key, it.IdempotencyKey), id)
}

// Enqueue adds one job to its partition's queue (Queue.Enqueue) and
// returns its ID and partition.
func (r *Router) Enqueue(ctx context.Context, key string, payload []byte) (string, int, error) {
	rc, err := r.EnqueueItem(ctx, Item{Key: key, Payload: payload})
	return rc.ID, rc.Partition, err
}

// EnqueueItem adds one job, maybe delayed or with an idempotency key, to
// its partition's queue (Queue.EnqueueItem).
func (r *Router) EnqueueItem(ctx context.Context, it Item) (Receipt, error) {
	id := ulid.Make().String()
	return r.queues[r.partitionOf(it, id)].enqueue(ctx, id, it)
}

// PartialError is EnqueueMany's answer when a batch spanning partitions
// was enqueued in some partitions and not in others (on Redis Cluster,
// where each partition is a script call of its own): IDs holds the ID of
// each item enqueued, "" for the others. Err is what refused the rest (it may
// wrap ErrOutcomeUnknown: those items may be enqueued too).
type PartialError struct {
	IDs []string
	Err error
}

func (e *PartialError) Error() string {
	n := 0
	for _, id := range e.IDs {
		if id != "" {
			n++
		}
	}
	return fmt.Sprintf("jobs: %d of %d jobs enqueued, the rest refused: %s", n, len(e.IDs), trim(e.Err))
}

func (e *PartialError) Unwrap() error { return e.Err }

// EnqueueMany adds items to their partitions' queues, each to the tail
// of its group, and returns their IDs in the items' order. The batch is
// checked whole first, as Queue.EnqueueMany does. Within one group,
// items run in their order; across groups no order holds. It is one
// script call, all or none, except on Redis Cluster, where it is one per
// partition, all or none each, every partition tried: when some fail and
// others succeed, the error is a *PartialError that says which items were
// enqueued.
func (r *Router) EnqueueMany(ctx context.Context, items []Item) ([]string, error) {
	rs, err := r.EnqueueItems(ctx, items)
	return idsOf(rs), err
}

// EnqueueItems is EnqueueMany with a Receipt per item.
func (r *Router) EnqueueItems(ctx context.Context, items []Item) ([]Receipt, error) {
	if err := CheckBatch(items); err != nil {
		return nil, err
	}
	ids := newIDs(len(items))
	parts := make([][]int, len(r.queues))
	of := make([]int, len(items))
	touched := 0
	for i, it := range items {
		p := r.partitionOf(it, ids[i])
		if len(parts[p]) == 0 {
			touched++
		}
		parts[p] = append(parts[p], i)
		of[i] = p
	}
	part := func(i int) int { return of[i] }
	if r.oneTx || touched == 1 {
		held, err := appendJobs(ctx, r.client, r.queues, parts, ids, items)
		if err != nil {
			return nil, enqueueError(len(items), err)
		}
		return receipts(ids, held, part), nil
	}
	return r.eachPartition(ctx, parts, ids, items, part)
}

// eachPartition writes each partition's part of a batch on its own (Redis
// Cluster: a script stays in one slot), every one tried.
func (r *Router) eachPartition(ctx context.Context, parts [][]int, ids []string, items []Item, part func(int) int) ([]Receipt, error) {
	held := make([]string, len(items))
	done := make([]string, len(items))
	var first error
	for p, in := range parts {
		if len(in) == 0 {
			continue
		}
		only := make([][]int, len(r.queues))
		only[p] = in
		h, err := appendJobs(ctx, r.client, r.queues, only, ids, items)
		if err != nil {
			first = cmp.Or(first, enqueueError(len(in), err))
			continue
		}
		for _, i := range in {
			held[i], done[i] = h[i], cmp.Or(h[i], ids[i])
		}
	}
	switch {
	case first == nil:
		return receipts(ids, held, part), nil
	case !anyID(done):
		return nil, first
	}
	return nil, &PartialError{IDs: done, Err: first}
}

func anyID(ids []string) bool {
	for _, id := range ids {
		if id != "" {
			return true
		}
	}
	return false
}

// PartitionStats reads every partition's Stats in one round trip (one
// pipeline; each partition's figures are read at one instant, but not
// with the others'), by partition.
func (r *Router) PartitionStats(ctx context.Context) ([]figures.Queue, error) {
	return statsOf(ctx, r.client, r.queues)
}

// Stats is the fleet's queue figures: every partition's, summed
// (figures.Sum).
func (r *Router) Stats(ctx context.Context) (figures.Queue, error) {
	if len(r.queues) == 1 {
		return r.queues[0].Stats(ctx)
	}
	parts, err := r.PartitionStats(ctx)
	if err != nil {
		return figures.Queue{}, err
	}
	return figures.Sum(parts), nil
}

// DeadLetters returns up to n dead letters of every partition, most
// recent first; n <= 0 returns all of them.
func (r *Router) DeadLetters(ctx context.Context, n int64) ([]DeadLetter, error) {
	var all []DeadLetter
	for _, q := range r.queues {
		dl, err := q.DeadLetters(ctx, n)
		if err != nil {
			return nil, err
		}
		all = append(all, dl...)
	}
	slices.SortStableFunc(all, func(a, b DeadLetter) int { return b.FailedAt.Compare(a.FailedAt) })
	if n > 0 && int64(len(all)) > n {
		all = all[:n]
	}
	return all, nil
}
