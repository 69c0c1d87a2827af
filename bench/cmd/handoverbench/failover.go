package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redisopt"
)

// failoverSample is one forced failover of the Redis master while the
// leader works through jobs, timed from the supervisor's clock right
// before the failover command.
type failoverSample struct {
	promoted time.Duration // → the replica answers ROLE as the master
	commit   time.Duration // → the first job committed on the new master
	refilled bool          // the failover lost the queued jobs: one was enqueued on the new master
}

// failoverRound keeps the leader busy, forces a failover of the master
// that holds the lock and the queue, and times it by polling the replica
// that will be promoted every 2ms: when it says it is the master, and when
// its committed counter first grows after that.
func (c *cluster) failoverRound(ctx context.Context) (failoverSample, error) {
	q, done, err := c.queue()
	if err != nil {
		return failoverSample{}, err
	}
	defer done()
	if err := c.topo.settle(ctx); err != nil {
		return failoverSample{}, err
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return failoverSample{}, err
	}
	for range max(300-st.Pending, 0) { // 20ms each: 6s of work, far longer than a failover
		// Right after the previous round's failover the demoted master may
		// still be resyncing, so an enqueue's WAIT can time out: the job is
		// written all the same (ErrNotReplicated), which is all the filler
		// needs.
		if _, err := q.Enqueue(ctx, "", []byte("work")); err != nil && !errors.Is(err, jobs.ErrNotReplicated) {
			return failoverSample{}, err
		}
	}
	cand, err := c.topo.candidate(ctx)
	if err != nil {
		return failoverSample{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	watched := make(chan failoverSample, 1)
	go func() { watched <- watchPromotion(wctx, cand, c.lockKey(), t0) }()
	if err := c.topo.failover(ctx); err != nil {
		return failoverSample{}, err
	}
	s := <-watched
	if s.commit == 0 {
		return s, fmt.Errorf("no job committed on %s within 30s of the failover", cand)
	}
	if err := c.topo.settle(ctx); err != nil {
		return s, err
	}
	return s, nil
}

// watchPromotion polls the node at addr until it is the master and has
// committed a job as one, or ctx ends (zero durations then).
func watchPromotion(ctx context.Context, addr, lockKey string, t0 time.Time) failoverSample {
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: time.Second})
	defer func() { _ = c.Close() }()
	q, err := jobs.New(jobs.Config{Client: c, Keys: keyspace.MustNew(lockKey).Lease()})
	if err != nil {
		return failoverSample{}
	}
	var s failoverSample
	from := int64(-1)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		role, err := c.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			if st, err := q.Stats(ctx); err == nil {
				switch {
				case from < 0:
					s.promoted, from = time.Since(t0), st.Committed
				case st.Committed > from:
					s.commit = time.Since(t0)
					return s
				case st.Pending == 0 && !s.refilled:
					// The failover lost the queued jobs (the filler's were
					// written without the WAIT's acknowledgement, see
					// failoverRound): give the leader one to commit, so the
					// round times the leadership, not the producer.
					_, err := q.Enqueue(ctx, "", []byte("work"))
					s.refilled = err == nil || errors.Is(err, jobs.ErrNotReplicated)
				}
			}
		}
		select {
		case <-ctx.Done():
			return failoverSample{}
		case <-tick.C:
		}
	}
}

// queue opens the queue as the replicas see it, to keep the leader busy.
func (c *cluster) queue() (*jobs.Queue, func(), error) {
	cfg, err := config.Load(config.Getenv(c.env("bench")))
	if err != nil {
		return nil, nil, err
	}
	b, err := backend.Open(cfg)
	if err != nil {
		return nil, nil, err
	}
	return b.Queues.Queues()[0], func() { _ = b.Close() }, nil
}
