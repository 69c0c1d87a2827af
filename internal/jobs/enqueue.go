package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/scriptpipe"
)

// ErrOutcomeUnknown is part of an EnqueueMany error when Redis did not
// answer (a broken connection, a timeout): the batch may have been
// enqueued, whole, or not at all; never in part. Without it, Redis refused
// the batch and nothing of it was enqueued.
var ErrOutcomeUnknown = errors.New("jobs: the batch was enqueued whole or not at all")

// trim drops the package prefix of a wrapped jobs error, so a message
// names the package once.
func trim(err error) string { return strings.TrimPrefix(err.Error(), "jobs: ") }

// Item is one job to enqueue: its payload and, optionally, its ordering
// key (see Job.Key), its due time and its idempotency key.
type Item struct {
	Key     string
	Payload []byte
	// NotBefore delays the job: it is kept apart until then (J:delayed)
	// and joins its key's order at that time, as if enqueued then, by
	// the partition leader's clock; it never holds the key's other jobs
	// back meanwhile. Zero, or a time not after now: the job joins at
	// once. At most MaxDelay ahead (ErrTooFarAhead).
	NotBefore time.Time
	// IdempotencyKey, when set, enqueues the job only if no job of its
	// partition holds the same idempotency key: while that job is
	// pending, delayed or parked, and for Config.IdempotencyTTL after it
	// finished, an enqueue with the key adds nothing and answers that
	// job's ID (Receipt.Existing). Checked in the script that appends, so
	// two concurrent senders get one job. A keyless job with one goes to
	// the partition its idempotency key picks (Router).
	IdempotencyKey string
}

// Receipt is an enqueue's answer for one item.
type Receipt struct {
	// ID is the job's ULID: the new job's, or, when Existing, the ID of
	// the job that holds the item's idempotency key.
	ID        string
	Partition int
	// Existing: nothing was enqueued for the item; a job enqueued earlier
	// with its idempotency key stands for it.
	Existing bool
}

// Enqueue appends a job with ordering key key ("" for none) to the tail of
// its group (the key's jobs; see Config.Partitions for keyless ones) and
// returns its ULID, and publishes the ID on EnqueuedChannel so an idle
// leader wakes at once. Anyone may call it; it needs no leadership. The
// job is checked first (CheckItem: an error wrapping ErrInvalidInput, and
// nothing written). Only the append decides the result: a lost notice costs the leader one PollInterval, while
// reporting it as a failure would invite a second enqueue of the same
// job.
func (q *Queue) Enqueue(ctx context.Context, key string, payload []byte) (string, error) {
	r, err := q.EnqueueItem(ctx, Item{Key: key, Payload: payload})
	return r.ID, err
}

// EnqueueItem is Enqueue of an item that may be delayed or carry an
// idempotency key (see Item).
func (q *Queue) EnqueueItem(ctx context.Context, it Item) (Receipt, error) {
	return q.enqueue(ctx, ulid.Make().String(), it)
}

func (q *Queue) enqueue(ctx context.Context, id string, it Item) (Receipt, error) {
	if err := checkItem(it, q.cfg.Now()); err != nil {
		return Receipt{}, err
	}
	held, err := appendJobs(ctx, q.cfg.Client, []*Queue{q}, [][]int{{0}}, []string{id}, []Item{it})
	switch {
	case errors.Is(err, ErrNotReplicated):
		return Receipt{}, fmt.Errorf("jobs: enqueue %s: %w", id, err)
	case err != nil:
		return Receipt{}, fmt.Errorf("jobs: enqueue: %w", err)
	}
	return receipts([]string{id}, held, func(int) int { return q.cfg.Partition })[0], nil
}

// EnqueueMany appends the items to the tails of their groups, in order,
// all or none, and returns their ULIDs in the same order (which is also
// the order in which the jobs of one group run); then it publishes one
// notice, the last ID. An item whose idempotency key a job already holds
// adds nothing, and its ID is that job's.
//
// The batch is checked whole before anything is written (CheckBatch: 1
// to MaxBatch items, each as CheckItem checks it, a *BatchError naming
// the first bad one, at most MaxBatchBytes in all). It is written by one script
// (enqueue.lua), which Redis runs atomically: no job of another producer
// lands between its jobs of one group, and no leader sees a part of it.
// The script checks every key it writes first, so a key of the wrong type
// refuses the batch whole; so does a refusal of the script (out of
// memory, an ACL).
//
// An error wrapping ErrOutcomeUnknown (no answer: the connection broke,
// a timeout) leaves the caller unable to tell whether the whole batch was
// added; it is never partly added. Any other error means none was.
func (q *Queue) EnqueueMany(ctx context.Context, items []Item) ([]string, error) {
	rs, err := q.EnqueueItems(ctx, items)
	return idsOf(rs), err
}

// EnqueueItems is EnqueueMany with a Receipt per item.
func (q *Queue) EnqueueItems(ctx context.Context, items []Item) ([]Receipt, error) {
	if err := checkBatch(items, q.cfg.Now()); err != nil {
		return nil, err
	}
	ids := newIDs(len(items))
	held, err := appendJobs(ctx, q.cfg.Client, []*Queue{q}, [][]int{indexes(len(items))}, ids, items)
	if err != nil {
		return nil, enqueueError(len(items), err)
	}
	return receipts(ids, held, func(int) int { return q.cfg.Partition }), nil
}

// receipts are the receipts of the items with new IDs ids, held[i] the
// ID of the job that holds item i's idempotency key ("" when it was
// enqueued), part(i) its partition.
func receipts(ids, held []string, part func(i int) int) []Receipt {
	out := make([]Receipt, len(ids))
	for i, id := range ids {
		out[i] = Receipt{ID: id, Partition: part(i)}
		if held[i] != "" {
			out[i].ID, out[i].Existing = held[i], true
		}
	}
	return out
}

// idsOf are the receipts' IDs, in order.
func idsOf(rs []Receipt) []string {
	if rs == nil {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// newIDs is n fresh ULIDs, in order (monotonic within the batch).
func newIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ulid.Make().String()
	}
	return ids
}

// enqueueError is EnqueueMany's error for n jobs: one that got no answer
// wraps ErrOutcomeUnknown.
func enqueueError(n int, err error) error {
	if errors.As(err, new(unanswered)) {
		return fmt.Errorf("jobs: enqueue %d jobs: %w (%w)", n, err, ErrOutcomeUnknown)
	}
	return fmt.Errorf("jobs: enqueue %d jobs: %w", n, err)
}

// unanswered is appendJobs' error when Redis did not answer the write
// (a broken connection, a timeout): it may have been applied.
type unanswered struct{ err error }

func (u unanswered) Error() string { return u.err.Error() }
func (u unanswered) Unwrap() error { return u.err }

// appendJobs writes items[i] with ID ids[i] to queues[k] for each i in
// parts[k], in one enqueue.lua call on client (all or none: the script
// checks every key first), with each queue's notice (its last ID) and,
// when the master has replicas, one WAIT pipelined behind it: one round
// trip. It returns, for each item, "" when it was written, or the ID of
// the job that holds its idempotency key (then nothing was written for
// it). A refusal is returned as Redis gave it (wrapped in ErrRedisFull
// for memory); no answer at all is an unanswered; a write that too few
// replicas acknowledged wraps ErrNotReplicated.
func appendJobs(ctx context.Context, client redis.Cmdable, queues []*Queue, parts [][]int, ids []string, items []Item) ([]string, error) {
	first := queues[slices.IndexFunc(parts, func(p []int) bool { return len(p) > 0 })]
	ack := first.acks
	conn, want, err := ack.conn(ctx, client, first.ready)
	if err != nil {
		return nil, fmt.Errorf("count the replicas: %w", err)
	}
	var c scriptpipe.Client = client
	if conn != nil {
		defer func() { _ = conn.Close() }()
		c = conn // the script and its WAIT on one connection
	}
	keys, args, order := appendArgs(queues, parts, ids, items, first.cfg.Now())
	b := scriptpipe.Batch{Script: enqueueScript, Keys: keys, Args: args}
	var late []*Queue // notices sent once the write is answered
	for k, part := range parts {
		switch q := queues[k]; {
		case len(part) == 0:
		case q.noticeAfter:
			late = append(late, q)
		default:
			b.After = append(b.After, q.notice(ids[part[len(part)-1]]))
		}
	}
	if conn != nil { // the WAIT of acks.check, bounded by its timeout
		b.After = append(b.After, replicas.WaitCommand(want, ack.timeout))
	}
	_, r := scriptpipe.Run(ctx, c, b, nil)
	var refused redis.Error
	reply, err := r.Script.Slice()
	switch {
	case err == nil:
	case errors.As(err, &refused):
		return nil, full(err)
	default:
		return nil, unanswered{err}
	}
	held, err := parseEnqueue(reply, order, len(items))
	if err != nil {
		return nil, err
	}
	for _, q := range late {
		part := parts[slices.Index(queues, q)]
		_ = q.publish(ctx, q.cfg.Client, ids[part[len(part)-1]])
	}
	if conn != nil {
		return held, ack.check(r.After[len(r.After)-1], want)
	}
	return held, nil
}

// parseEnqueue decodes enqueue.lua's reply, one value per job in the
// script's order (order[j] is the item the j-th is), into one per item:
// "" for an item written, or the ID that holds its idempotency key.
func parseEnqueue(reply []any, order []int, n int) ([]string, error) {
	if len(reply) != len(order) {
		return nil, fmt.Errorf("jobs: enqueue: %d jobs sent, %d answered", len(order), len(reply))
	}
	held := make([]string, n)
	for j, v := range reply {
		held[order[j]] = str(v)
	}
	return held, nil
}

// appendArgs is enqueue.lua's keys and arguments for appendJobs, and the
// order in which it takes the items (order[j]: the item of its j-th job).
// An item due after now is delayed.
func appendArgs(queues []*Queue, parts [][]int, ids []string, items []Item, now time.Time) (keys []string, args []any, order []int) {
	var used []*Queue
	index := map[*Queue]int{} // 1-based, as the script counts
	n := 0
	for k, part := range parts {
		if len(part) > 0 {
			used = append(used, queues[k])
			index[queues[k]] = len(used)
			n += len(part)
		}
	}
	keys = make([]string, 0, 3*len(used)+n)
	for _, name := range []func(q *Queue) string{
		func(q *Queue) string { return q.ready },
		func(q *Queue) string { return q.counters },
		func(q *Queue) string { return q.delayed },
	} {
		for _, q := range used {
			keys = append(keys, name(q))
		}
	}
	ms := now.UnixMilli()
	args = make([]any, 0, 2+len(used)+5*n)
	args = append(args, len(used), ms)
	for _, q := range used {
		args = append(args, q.idemPrefix)
	}
	order = make([]int, 0, n)
	for k, part := range parts {
		q := queues[k]
		for _, i := range part {
			it := items[i]
			m := q.member(it.Key, ids[i])
			var due int64
			if it.NotBefore.After(now) {
				due = it.NotBefore.UnixMilli()
			}
			keys = append(keys, q.group(m))
			args = append(args, index[q], m, encodeEntry(ids[i], ms, entryMeta{due: due, idem: it.IdempotencyKey}, it.Key, it.Payload),
				due, it.IdempotencyKey)
			order = append(order, i)
		}
	}
	return keys, args, order
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// EnqueuedChannel is the pub/sub channel Enqueue publishes new job IDs on;
// wire it to Worker.Notify (package notice).
func (q *Queue) EnqueuedChannel() string { return q.enqueued }

// notice is the command that publishes msg on EnqueuedChannel, for a
// pipeline: it goes behind the write it announces. A notice must not
// reach a leader before that write, or the leader looks, finds nothing
// and sleeps until its next poll: in one pipeline they stay in order on
// one node. On a Redis Cluster with classic notices (partitions) the
// notice may go to another node than the queue's, so there it is sent
// once the write was answered (noticeAfter), with publish.
func (q *Queue) notice(msg string) []any {
	if q.cfg.ShardedNotices {
		return []any{"SPUBLISH", q.enqueued, msg}
	}
	return []any{"PUBLISH", q.enqueued, msg}
}

// publish sends msg on EnqueuedChannel now.
func (q *Queue) publish(ctx context.Context, c redis.Cmdable, msg string) error {
	return notice.Publish(ctx, c, q.cfg.ShardedNotices, q.enqueued, msg).Err()
}

// runNoticed runs script, then publishes msg on EnqueuedChannel, in one
// round trip when it can (see notice), and returns the script's reply.
// An operator's change (resume, requeue, retry, skip) wakes the leader
// this way.
func (q *Queue) runNoticed(ctx context.Context, script *redis.Script, keys []string, args []any, msg string) *redis.Cmd {
	b := scriptpipe.Batch{Script: script, Keys: keys, Args: args}
	if !q.noticeAfter {
		b.After = [][]any{q.notice(msg)}
	}
	_, r := scriptpipe.Run(ctx, q.cfg.Client, b, nil)
	if q.noticeAfter && r.Script.Err() == nil {
		_ = q.publish(ctx, q.cfg.Client, msg)
	}
	return r.Script
}
