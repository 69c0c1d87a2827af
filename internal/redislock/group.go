package redislock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed renewmany.lua
var renewManyLua string

var renewManyScript = redis.NewScript(renewManyLua)

// Group renews the leases of many Lockers that share their nodes and TTL
// (one replica's partitions) together: one script per node for all of
// them, so renewing n leases costs one round trip and n+2 commands in
// Redis instead of n round trips and 3n commands.
type Group struct {
	lockers []*Locker
	// oneScript: the nodes run one script over keys of different hash
	// slots (not a Redis Cluster).
	oneScript bool
}

// NewGroup returns a Group of lockers, which must share their nodes, TTL
// and drift. With oneScript false (Redis Cluster, whose scripts cannot
// span slots) Renew renews each lease with its own script, in parallel.
func NewGroup(lockers []*Locker, oneScript bool) (*Group, error) {
	if len(lockers) == 0 {
		return nil, errors.New("redislock: a Group needs lockers")
	}
	first := lockers[0]
	for i, l := range lockers[1:] {
		if !slices.Equal(l.nodes, first.nodes) || l.ttl != first.ttl || l.validity != first.validity {
			return nil, fmt.Errorf("redislock: Group: locker %d does not share the first one's nodes and TTL", i+1)
		}
	}
	return &Group{lockers: slices.Clone(lockers), oneScript: oneScript}, nil
}

// Renew renews leases[i] with lockers[i] (a nil lease is skipped) and
// returns, by index, what Locker.Renew would have: nil when renewed (its
// deadline moved), an error wrapping ErrLost when the lease is gone, or
// the nodes' errors.
func (g *Group) Renew(ctx context.Context, leases []*Lease) []error {
	errs := make([]error, len(leases))
	if len(leases) != len(g.lockers) {
		for i := range errs {
			errs[i] = fmt.Errorf("redislock: Group: %d leases for %d lockers", len(leases), len(g.lockers))
		}
		return errs
	}
	if !g.oneScript {
		g.each(ctx, leases, errs)
		return errs
	}
	l := g.lockers[0]
	start := l.now()
	var idx []int // the leases to renew, by index
	keys := make([]string, 0, len(leases))
	args := []any{l.ttlArg}
	for i, lease := range leases {
		switch {
		case lease == nil:
		case !start.Before(lease.Deadline()):
			errs[i] = fmt.Errorf("%w: local deadline passed", ErrLost)
		default:
			idx = append(idx, i)
			keys = append(keys, g.lockers[i].keys.Lock())
			args = append(args, lease.value)
		}
	}
	if len(idx) == 0 {
		return errs
	}
	res := fanOut(ctx, l, nil, func(ctx context.Context, _ int, n redis.Scripter) ([]int64, error) {
		v, err := renewManyScript.Run(ctx, n, keys, args...).Int64Slice()
		if err == nil && len(v) != len(keys) {
			err = fmt.Errorf("redislock: renew: %d answers for %d leases", len(v), len(keys))
		}
		return v, err
	})
	now := l.now()
	for k, i := range idx {
		var ok, notMine int
		var nodeErrs []error
		for n, r := range res {
			switch {
			case r.err != nil:
				nodeErrs = append(nodeErrs, l.nodeErr(n, r.err))
			case r.v[k] == 1:
				ok++
			default:
				notMine++
				nodeErrs = append(nodeErrs, l.nodeErr(n, errNotHeld))
			}
		}
		errs[i] = l.renewed(leases[i], start, now, ok, notMine, nodeErrs)
	}
	return errs
}

// groupParallel bounds the scripts of one Renew in flight without
// oneScript.
const groupParallel = 16

func (g *Group) each(ctx context.Context, leases []*Lease, errs []error) {
	sem := make(chan struct{}, groupParallel)
	var wg sync.WaitGroup
	for i, lease := range leases {
		if lease == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = g.lockers[i].Renew(ctx, lease)
		})
	}
	wg.Wait()
}

// renewed turns the nodes' answers to one renew, begun at start and
// answered by now, into Renew's result, moving the lease's deadline on
// success.
func (l *Locker) renewed(lease *Lease, start, now time.Time, ok, notMine int, errs []error) error {
	if ok >= l.quorum {
		deadline := start.Add(l.validity)
		if !now.Before(deadline) {
			return fmt.Errorf("%w: renew took %s, past the lease validity", ErrLost, now.Sub(start).Round(time.Millisecond))
		}
		lease.extend(deadline)
		return nil
	}
	if notMine > len(l.nodes)-l.quorum {
		return fmt.Errorf("%w: key missing or held by another value on %d of %d nodes", ErrLost, notMine, len(l.nodes))
	}
	return fmt.Errorf("redislock: renew: %d of %d nodes renewed, %d needed: %w", ok, len(l.nodes), l.quorum, errors.Join(errs...))
}
