package main

import (
	"context"
	"errors"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncLib is github.com/go-redsync/redsync/v4 over go-redis v9: SET NX PX
// on every node in parallel, a compare-and-delete script to release. One
// try per acquire; its per-attempt timeout is set to the node timeout, like
// lockworker's.
var redsyncLib = contender{
	name: "redsync",
	peer: true,
	newLock: func(nodes []*redis.Client, key, _ string, o options) (lock, error) {
		pools := make([]rsredis.Pool, len(nodes))
		for i, n := range nodes {
			pools[i] = goredis.NewPool(n)
		}
		m := redsync.New(pools...).NewMutex(key,
			redsync.WithExpiry(o.ttl),
			redsync.WithTries(1),
			redsync.WithTimeoutFactor(float64(o.nodeTimeout)/float64(o.ttl)))
		return &redsyncLock{m: m}, nil
	},
}

type redsyncLock struct{ m *redsync.Mutex }

var _ lock = (*redsyncLock)(nil)

func (r *redsyncLock) acquire(ctx context.Context) (bool, error) {
	err := r.m.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) || errors.Is(err, redsync.ErrFailed) {
		return false, nil
	}
	return err == nil, err
}

func (r *redsyncLock) release(ctx context.Context) error {
	ok, err := r.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock found the lock gone")
	}
	return err
}
