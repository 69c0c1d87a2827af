package main

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redislock"
)

// lockworkerLib is lockworker's internal/redislock, used as the daemon uses
// it: one Locker per key, Acquire once, Release with the lease.
var lockworkerLib = contender{
	name: "lockworker",
	newLock: func(nodes []*redis.Client, key, id string, o options) (lock, error) {
		sc := make([]redis.Scripter, len(nodes))
		for i, n := range nodes {
			sc[i] = n
		}
		l, err := redislock.New(redislock.Config{Nodes: sc, Keys: keyspace.MustNew(key).Lease(), TTL: o.ttl, NodeTimeout: o.nodeTimeout})
		if err != nil {
			return nil, err
		}
		return &lockworkerLock{l: l, id: id}, nil
	},
}

type lockworkerLock struct {
	l     *redislock.Locker
	id    string
	lease *redislock.Lease
}

var _ lock = (*lockworkerLock)(nil)

func (w *lockworkerLock) acquire(ctx context.Context) (bool, error) {
	lease, err := w.l.Acquire(ctx, w.id, 0)
	if errors.Is(err, redislock.ErrNotAcquired) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	w.lease = lease
	return true, nil
}

func (w *lockworkerLock) release(ctx context.Context) error {
	lease := w.lease
	w.lease = nil
	return w.l.Release(ctx, lease)
}
