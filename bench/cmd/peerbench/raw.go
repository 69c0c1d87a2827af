package main

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// rawCycle is the physical floor of a lock cycle: SET NX PX then DEL, plain
// go-redis commands and nothing else. It is not a safe lock (DEL does not
// compare the value, and a failed quorum is not cleaned up); it is the
// baseline every library's figure is divided by.
var rawCycle = contender{
	name: "raw SET NX PX + DEL",
	raw:  true,
	newLock: func(nodes []*redis.Client, key, id string, o options) (lock, error) {
		return &rawLock{nodes: nodes, key: key, value: id, o: o}, nil
	},
}

// rawPing is one round trip: PING, with no release. Its p50 is the RTT.
var rawPing = contender{
	name: "raw PING (1 RTT)",
	raw:  true,
	newLock: func(nodes []*redis.Client, _, _ string, _ options) (lock, error) {
		return pingLock{nodes[0]}, nil
	},
}

type rawLock struct {
	nodes []*redis.Client
	key   string
	value string
	o     options
}

func (r *rawLock) acquire(ctx context.Context) (bool, error) {
	oks, err := eachNode(r.nodes, func(c *redis.Client) (bool, error) {
		return c.SetNX(ctx, r.key, r.value, r.o.ttl).Result()
	})
	return oks >= len(r.nodes)/2+1, err
}

func (r *rawLock) release(ctx context.Context) error {
	_, err := eachNode(r.nodes, func(c *redis.Client) (bool, error) {
		return true, c.Del(ctx, r.key).Err()
	})
	return err
}

// eachNode runs fn on every node, in parallel when there are several (as
// Redlock does), and counts the trues; it returns the first error.
func eachNode(nodes []*redis.Client, fn func(*redis.Client) (bool, error)) (int, error) {
	if len(nodes) == 1 {
		ok, err := fn(nodes[0])
		if ok {
			return 1, err
		}
		return 0, err
	}
	oks := make([]bool, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, c := range nodes {
		wg.Go(func() { oks[i], errs[i] = fn(c) })
	}
	wg.Wait()
	n := 0
	for i, ok := range oks {
		if errs[i] != nil {
			return n, errs[i]
		}
		if ok {
			n++
		}
	}
	return n, nil
}

type pingLock struct{ c *redis.Client }

func (p pingLock) acquire(ctx context.Context) (bool, error) { return true, p.c.Ping(ctx).Err() }
func (pingLock) release(context.Context) error               { return nil }
