package redislock

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// result is one node's answer; zero for a node that was not contacted.
type result[T any] struct {
	v   T
	err error
}

// fanOut runs fn on the nodes idx (all when nil) in parallel, each with a
// context whose deadline is min(ctx's, now+NodeTimeout), and waits for all.
// The results are indexed by node; nodes not in idx get a zero result.
func fanOut[T any](ctx context.Context, l *Locker, idx []int, fn func(context.Context, redis.Scripter) (T, error)) []result[T] {
	if idx == nil {
		idx = make([]int, len(l.nodes))
		for i := range idx {
			idx[i] = i
		}
	}
	out := make([]result[T], len(l.nodes))
	call := func(i int) {
		ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
		defer cancel()
		v, err := fn(ctx, l.nodes[i])
		out[i] = result[T]{v: v, err: err}
	}
	if len(idx) == 1 {
		call(idx[0])
		return out
	}
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { call(i) })
	}
	wg.Wait()
	return out
}
