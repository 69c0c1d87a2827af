package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/replicas"
)

// ErrNotReplicated is part of an enqueue's error when the job (or the
// whole batch) was written on the master but fewer replicas than required
// acknowledged it in time (WAIT): a failover now could lose it. It is in
// the queue and runs unless such a failover comes. Retried with the same
// idempotency key it is enqueued once: with MinReplicas above 0 no job
// runs before its claim, and so its enqueue, is acknowledged, so a job a
// failover discards has not run. Retried without one it may be added
// twice (jobs are at-least-once anyway).
var ErrNotReplicated = errors.New("jobs: written on the master but not acknowledged by enough replicas in time (a failover could lose it)")

// acks is the WAIT step of the enqueues (package replicas): a write is
// acknowledged to the caller only once every online replica of its
// master, and at least min, has it. With no replica and min 0 nothing
// waits. With min above 0 the leader's steps that claim jobs wait by the
// same rule (required) before the jobs run.
type acks struct {
	min     int
	timeout time.Duration
	counts  *replicas.Counts
}

// newAcks is the queue's WAIT step; nil when enqueues are not waited for
// (MinReplicas < 0).
func newAcks(cfg Config) *acks {
	if cfg.MinReplicas < 0 {
		return nil
	}
	counts := cfg.ReplicaCounts
	if counts == nil {
		counts = replicas.NewCounts(nil)
	}
	return &acks{min: cfg.MinReplicas, timeout: cmp.Or(cfg.ReplicaTimeout, time.Second), counts: counts}
}

// required says whether MinReplicas asks for any replica: then a job
// runs only once a WAIT acknowledged its claim (Queue.step), which covers
// its enqueue. With 0 the steps send no WAIT, as before.
func (a *acks) required() bool { return a != nil && a.min > 0 }

// conn is a connection to the master that holds key and how many
// acknowledgements a write on it needs: a nil conn when none (no
// replica, min 0) or the client cannot say (then nothing waits). WAIT
// counts the acknowledgements of the writes made on its own connection,
// so the write and the WAIT go on conn, which the caller closes.
func (a *acks) conn(ctx context.Context, c redis.Cmdable, key string) (*redis.Conn, int, error) {
	if a == nil {
		return nil, 0, nil
	}
	m, err := replicas.Master(ctx, c, key)
	if m == nil || err != nil {
		return nil, 0, err
	}
	online, err := a.counts.Fresh(ctx, m)
	if err != nil {
		return nil, 0, err
	}
	want := replicas.Want(online, a.min)
	if want == 0 {
		return nil, 0, nil
	}
	return m.Conn(), want, nil
}

// check is the WAIT's verdict: nil when want replicas acknowledged.
func (a *acks) check(wait *redis.Cmd, want int) error {
	// The master is not known here: every count is read again.
	if err := a.counts.Acked("", wait, want, a.timeout); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReplicated, err)
	}
	return nil
}
