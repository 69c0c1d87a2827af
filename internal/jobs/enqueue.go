package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockworker/lockworker/internal/notice"
	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
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
// key (see Job.Key).
type Item struct {
	Key     string
	Payload []byte
}

// Enqueue appends a job with ordering key key ("" for none) to the tail of
// the queue and returns its ULID, and publishes the ID on EnqueuedChannel
// so an idle leader wakes at once. Anyone may call it; it needs no
// leadership. The job is checked first (CheckItem: an error wrapping
// ErrInvalidInput, and nothing written). Only the
// append decides the result: a lost notice costs the leader one
// PollInterval, while reporting it as a failure would invite a second
// enqueue of the same job.
func (q *Queue) Enqueue(ctx context.Context, key string, payload []byte) (string, error) {
	return q.enqueue(ctx, ulid.Make().String(), Item{Key: key, Payload: payload})
}

func (q *Queue) enqueue(ctx context.Context, id string, it Item) (string, error) {
	if err := CheckItem(it); err != nil {
		return "", err
	}
	conn, want, err := q.acks.conn(ctx, q.cfg.Client, q.stream)
	if err != nil {
		return "", fmt.Errorf("jobs: enqueue: count the replicas: %w", err)
	}
	if conn != nil {
		defer func() { _ = conn.Close() }()
	}
	var add *redis.StringCmd
	var wait *redis.Cmd
	q.withNotice(ctx, conn, func(p redis.Pipeliner) {
		add = p.XAdd(ctx, q.xadd(id, it, q.nowMillis()))
		if conn != nil {
			wait = q.acks.wait(ctx, p, want)
		}
	}, id)
	if err := add.Err(); err != nil {
		return "", fmt.Errorf("jobs: enqueue: %w", full(err))
	}
	if wait != nil {
		if err := q.acks.check(wait, want); err != nil {
			return "", fmt.Errorf("jobs: enqueue %s: %w", id, err)
		}
	}
	return id, nil
}

// EnqueueMany appends the items to the tail of the queue, in order, all
// or none, and returns their ULIDs in the same order (which is also their
// processing order); then it publishes one notice, the last ID.
//
// The batch is checked whole before anything is written (CheckBatch: 1
// to MaxBatch items, each as CheckItem checks it, a *BatchError naming
// the first bad one, at most MaxBatchBytes in all). It is written as one MULTI/EXEC
// transaction, so no job of another producer lands between its jobs, and
// no leader sees a part of it. Redis does not roll a transaction back, but
// every command in it is an XADD with a fresh ID to the same stream, so
// they succeed or fail together: a wrong key type fails each of them, and
// a refusal before EXEC (out of memory, an ACL) discards them all.
//
// A batch of one is an Enqueue: one round trip instead of two.
//
// An error wrapping ErrOutcomeUnknown (no answer: the connection broke,
// a timeout) leaves the caller unable to tell whether the whole batch was
// added; it is never partly added. Any other error means none was.
func (q *Queue) EnqueueMany(ctx context.Context, items []Item) ([]string, error) {
	if err := CheckBatch(items); err != nil {
		return nil, err
	}
	if len(items) == 1 { // all or none by itself
		id, err := q.Enqueue(ctx, items[0].Key, items[0].Payload)
		if err != nil {
			return nil, err
		}
		return []string{id}, nil
	}
	ids := make([]string, len(items))
	for i := range ids {
		ids[i] = ulid.Make().String() // monotonic: in order within the batch
	}
	err := addMany(ctx, q.cfg.Client, []*Queue{q}, [][]int{indexes(len(items))}, ids, items)
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// addMany writes items[i] with ID ids[i] to queues[k] for each i in
// parts[k], in one MULTI/EXEC on client, then publishes each queue's last
// ID on its channel (after EXEC, not inside it: a notice that cannot be
// sent, say an ACL without the channel, must not undo the batch). A
// refusal before EXEC (out of memory, an ACL) discards every XADD; one
// that fails inside EXEC (a stream key of the wrong type) fails alone, so
// a batch over several streams can be written in part: the error is then
// a *PartialError naming what was written.
func addMany(ctx context.Context, client redis.Cmdable, queues []*Queue, parts [][]int, ids []string, items []Item) error {
	n := 0
	for _, part := range parts {
		n += len(part)
	}
	now := queues[0].nowMillis()
	first := slices.IndexFunc(parts, func(p []int) bool { return len(p) > 0 })
	ack := queues[first].acks
	conn, want, err := ack.conn(ctx, client, queues[first].stream)
	if err != nil {
		return fmt.Errorf("jobs: enqueue %d jobs: count the replicas: %w", n, err)
	}
	if conn != nil {
		defer func() { _ = conn.Close() }()
		client = conn // the transaction and its WAIT on one connection
	}
	adds := make(map[int]*redis.StringCmd, n)
	_, err = client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for k, part := range parts {
			for _, i := range part {
				adds[i] = p.XAdd(ctx, queues[k].xadd(ids[i], items[i], now))
			}
		}
		return nil
	})
	var refused redis.Error
	switch {
	case err == nil:
	case !errors.As(err, &refused):
		return fmt.Errorf("jobs: enqueue %d jobs: %w (%w)", n, err, ErrOutcomeUnknown)
	default: // a reply: MULTI, a queued command, EXEC or an XADD inside it refused
		for _, add := range adds {
			if errors.Is(full(add.Err()), ErrRedisFull) { // queued refused for memory: EXECABORT
				err = fmt.Errorf("%w: %w", ErrRedisFull, err)
				break
			}
		}
		written := make([]string, len(ids))
		some := false
		for i, add := range adds {
			if add.Err() == nil && add.Val() != "" {
				written[i], some = ids[i], true
			}
		}
		if !some {
			return fmt.Errorf("jobs: enqueue %d jobs: %w", n, err)
		}
		return &PartialError{IDs: written, Err: err}
	}
	if conn != nil { // one WAIT for the whole batch
		err = ack.check(conn.Do(ctx, "WAIT", want, ack.timeout.Milliseconds()), want)
	}
	for k, part := range parts {
		if len(part) > 0 {
			q := queues[k]
			_ = notice.Publish(ctx, client, q.cfg.ShardedNotices, q.enqueued, ids[part[len(part)-1]]).Err()
		}
	}
	if err != nil {
		return fmt.Errorf("jobs: enqueue %d jobs: %w", n, err)
	}
	return nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func (q *Queue) xadd(id string, it Item, now string) *redis.XAddArgs {
	values := []any{"id", id, "payload", it.Payload, "enqueued_at", now}
	if it.Key != "" {
		values = append(values, "key", it.Key)
	}
	return &redis.XAddArgs{Stream: q.stream, Values: values}
}

// EnqueuedChannel is the pub/sub channel Enqueue publishes new job IDs on;
// wire it to Worker.Notify (package notice).
func (q *Queue) EnqueuedChannel() string { return q.enqueued }

// withNotice sends write and, behind it, the enqueue notice msg, in one
// round trip (on conn, when not nil). A notice must not reach a leader before the write it
// announces, or the leader looks, finds nothing and sleeps until its
// next poll: in one pipeline they stay in order on one node. On a Redis
// Cluster with classic notices (partitions) the notice may go to another
// node than the queue's, so there it is sent once the write was
// answered, one round trip later.
func (q *Queue) withNotice(ctx context.Context, conn *redis.Conn, write func(p redis.Pipeliner), msg string) {
	var c redis.Cmdable = q.cfg.Client
	if conn != nil {
		c = conn // the write and its WAIT on one connection
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		write(p)
		if !q.noticeAfter {
			notice.Publish(ctx, p, q.cfg.ShardedNotices, q.enqueued, msg)
		}
		return nil
	})
	if q.noticeAfter && err == nil {
		_ = notice.Publish(ctx, q.cfg.Client, q.cfg.ShardedNotices, q.enqueued, msg).Err()
	}
}
