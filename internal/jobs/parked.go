package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotParked is Retry's and Skip's answer when the group they name is
// not parked (or is parked on another job than the one named).
var ErrNotParked = errors.New("jobs: no such parked key")

// ParkedKey is a parked group: a job of it failed for good (its
// attempts exhausted, a permanent error, or its store refusing three
// leaderships' tokens), and it holds that job and every later job of its
// key, in order, until an operator retries or skips it.
type ParkedKey struct {
	// Key is the group's key; "" for a keyless group (the serial queue
	// of one partition, or one keyless job): JobID names it.
	Key       string `json:"key"`
	Partition int    `json:"partition"`
	// Held counts the jobs it holds, the failing one included.
	Held int64 `json:"held"`
	// JobID is the failing job; Attempts its deliveries, Error the last
	// one's error.
	JobID    string    `json:"jobId"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	ParkedAt time.Time `json:"parkedAt"`
	// Token is the fencing token of the leader that parked it.
	Token int64 `json:"token"`

	member string
}

// parkRecord is a J:parked value, as step.lua writes it.
type parkRecord struct {
	JobID    string `json:"jobId"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
	ParkedAt int64  `json:"parkedAt"`
	Token    int64  `json:"token"`
}

// Ref names a parked group for Retry and Skip: by its Key, or by the ID
// of its failing job (JobID; the only way to name a keyless group). With
// both, both must match.
type Ref struct {
	Key, JobID string
}

func (r Ref) String() string {
	switch {
	case r.Key != "" && r.JobID != "":
		return fmt.Sprintf("key %q (job %s)", r.Key, r.JobID)
	case r.Key != "":
		return fmt.Sprintf("key %q", r.Key)
	}
	return "job " + r.JobID
}

// Parked lists the queue's parked groups, longest parked first.
func (q *Queue) Parked(ctx context.Context) ([]ParkedKey, error) {
	all, err := q.cfg.Client.HGetAll(ctx, q.parked).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: parked keys: %w", err)
	}
	out := make([]ParkedKey, 0, len(all))
	for m, v := range all {
		var r parkRecord
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, fmt.Errorf("jobs: parked key %q: %w", keyOf(m), err)
		}
		out = append(out, ParkedKey{Key: keyOf(m), Partition: q.cfg.Partition, JobID: r.JobID, Attempts: r.Attempts,
			Error: r.Error, ParkedAt: time.UnixMilli(r.ParkedAt), Token: r.Token, member: m})
	}
	if len(out) == 0 {
		return nil, nil
	}
	held := make([]*redis.IntCmd, len(out))
	_, err = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pk := range out {
			held[i] = p.LLen(ctx, q.group(pk.member))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: parked keys: %w", err)
	}
	for i := range out {
		out[i].Held = held[i].Val()
	}
	sortParked(out)
	return out, nil
}

func sortParked(ps []ParkedKey) {
	slices.SortFunc(ps, func(a, b ParkedKey) int {
		return cmp.Or(a.ParkedAt.Compare(b.ParkedAt), cmp.Compare(a.Key, b.Key), cmp.Compare(a.JobID, b.JobID))
	})
}

// find is the member of the parked group ref names, "" when none.
func (q *Queue) find(ctx context.Context, ref Ref) (string, error) {
	if ref.Key != "" {
		return memberKey + ref.Key, nil
	}
	ps, err := q.Parked(ctx)
	if err != nil {
		return "", err
	}
	for _, p := range ps {
		if p.JobID == ref.JobID {
			return p.member, nil
		}
	}
	return "", nil
}

// Retry runs the failing job of the parked group ref names again now,
// with fresh attempts; on success the held jobs follow in order. It
// returns the job's ID, or ErrNotParked. It needs no leadership.
func (q *Queue) Retry(ctx context.Context, ref Ref) (string, error) {
	m, err := q.find(ctx, ref)
	if err != nil || m == "" {
		return "", notParked("retry", ref, err)
	}
	id, err := q.runNoticed(ctx, retryScript, q.retryKeys(),
		[]any{m, ref.JobID, q.nowMillis(), q.groups}, "release").Text()
	if err != nil {
		return "", notParked("retry", ref, err)
	}
	return id, nil
}

// Skip moves the failing job of the parked group ref names to the dead
// letters, recorded as skipped by by, for reason, and releases the
// group's held jobs in order. It returns the job's ID, or ErrNotParked.
// It needs no leadership. Skipping breaks the key's order at that job:
// it is an operator's decision, recorded as one.
func (q *Queue) Skip(ctx context.Context, ref Ref, by, reason string) (string, error) {
	m, err := q.find(ctx, ref)
	if err != nil || m == "" {
		return "", notParked("skip", ref, err)
	}
	id, err := q.runNoticed(ctx, skipScript, q.skipKeys(),
		[]any{m, ref.JobID, q.nowMillis(), q.groups, q.deadPrefix, by, reason, q.idemPrefix, q.cfg.IdempotencyTTL.Milliseconds()},
		"release").Text()
	if err != nil {
		return "", notParked("skip", ref, err)
	}
	return id, nil
}

// retryKeys is retry.lua's KEYS, in its header's order.
func (q *Queue) retryKeys() []string { return []string{q.parked, q.ready, q.attempts, q.stale} }

// skipKeys is skip.lua's KEYS, in its header's order.
func (q *Queue) skipKeys() []string {
	return []string{q.parked, q.ready, q.attempts, q.stale, q.dead, q.counters}
}

// notParked is Retry's and Skip's error: ErrNotParked when err is nil
// or redis.Nil (the script found no such parked group).
func notParked(op string, ref Ref, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return fmt.Errorf("jobs: %s %s: %w", op, ref, ErrNotParked)
	}
	return fmt.Errorf("jobs: %s %s: %w", op, ref, err)
}

// Parked lists every partition's parked groups, longest parked first.
func (r *Router) Parked(ctx context.Context) ([]ParkedKey, error) {
	var all []ParkedKey
	for _, q := range r.queues {
		ps, err := q.Parked(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, ps...)
	}
	sortParked(all)
	return all, nil
}

// Retry is Queue.Retry on the partition ref's key picks, or, by job ID,
// on every partition until one has it parked.
func (r *Router) Retry(ctx context.Context, ref Ref) (string, error) {
	return r.each(ref, func(q *Queue) (string, error) { return q.Retry(ctx, ref) })
}

// Skip is Queue.Skip as Retry finds the queue.
func (r *Router) Skip(ctx context.Context, ref Ref, by, reason string) (string, error) {
	return r.each(ref, func(q *Queue) (string, error) { return q.Skip(ctx, ref, by, reason) })
}

func (r *Router) each(ref Ref, fn func(q *Queue) (string, error)) (string, error) {
	if ref.Key == "" && ref.JobID == "" {
		return "", errors.New("jobs: name a parked key by its key or its failing job's ID")
	}
	if ref.Key != "" {
		return fn(r.queues[r.Partition(ref.Key, "")])
	}
	var err error
	for _, q := range r.queues {
		var id string
		if id, err = fn(q); !errors.Is(err, ErrNotParked) {
			return id, err
		}
	}
	return "", err
}
