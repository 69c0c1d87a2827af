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

// fanOut runs fn on the nodes idx (all when nil) in parallel, under one
// context whose deadline is min(ctx's, now+NodeTimeout) (the calls start
// together, so one deadline bounds each of them as its own would), and
// waits for all. fn gets the node's index and client. The results are
// indexed by node; nodes not in idx get a zero result.
func fanOut[T any](ctx context.Context, l *Locker, idx []int, fn func(ctx context.Context, i int, n redis.Scripter) (T, error)) []result[T] {
	ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	out := make([]result[T], len(l.nodes))
	switch {
	case idx == nil && len(l.nodes) == 1:
		idx = []int{0}
	case idx == nil:
		idx = make([]int, len(l.nodes))
		for i := range idx {
			idx[i] = i
		}
	}
	if len(idx) == 1 {
		i := idx[0]
		out[i].v, out[i].err = fn(ctx, i, l.nodes[i])
		return out
	}
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { out[i].v, out[i].err = fn(ctx, i, l.nodes[i]) })
	}
	wg.Wait()
	return out
}
