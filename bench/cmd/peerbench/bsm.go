package main

import (
	"context"
	"errors"

	bsm "github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// bsmLib is github.com/bsm/redislock: single node only, one Lua script
// (SET NX PX) to obtain and a compare-and-delete script to release. No
// retries, so a busy key answers at once like the others.
var bsmLib = contender{
	name: "bsm/redislock",
	peer: true,
	newLock: func(nodes []*redis.Client, key, _ string, o options) (lock, error) {
		if len(nodes) != 1 {
			return nil, errors.New("bsm/redislock supports one node only")
		}
		return &bsmLock{c: bsm.New(nodes[0]), key: key, o: o}, nil
	},
}

type bsmLock struct {
	c   *bsm.Client
	key string
	o   options
	l   *bsm.Lock
}

var _ lock = (*bsmLock)(nil)

var bsmOnce = &bsm.Options{RetryStrategy: bsm.NoRetry()}

func (b *bsmLock) acquire(ctx context.Context) (bool, error) {
	l, err := b.c.Obtain(ctx, b.key, b.o.ttl, bsmOnce)
	if errors.Is(err, bsm.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b.l = l
	return true, nil
}

func (b *bsmLock) release(ctx context.Context) error {
	l := b.l
	b.l = nil
	return l.Release(ctx)
}
