package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
)

// fastTimings settle a fleet in seconds (the handover benchmark's); the
// idle fleet runs with the defaults instead.
var fastTimings = []string{"LOCK_TTL=2s", "RENEW_INTERVAL=500ms", "RETRY_INTERVAL=1s"}

// group is one fleet of replicas sharing a LOCK_KEY and its PARTITIONS.
type group struct {
	env   []string // every replica's, WORKER_ID aside
	parts int
	live  []*fleet.Process
}

// startGroup starts n replicas of bin with env (which names the Redis,
// the key and the rest) and parts partitions, and waits until they share
// the partitions.
func startGroup(ctx context.Context, f *fleet.Fleet, bin, name string, n, parts int, env []string, limit time.Duration) (*group, error) {
	g := &group{env: append(slices.Clone(env), "LOCK_KEY="+name, "PARTITIONS="+strconv.Itoa(parts)), parts: parts}
	for i := range n {
		id := fmt.Sprintf("%s-%d", name, i+1)
		p, err := f.Start(fleet.Spec{Name: id, Path: bin, Env: append(slices.Clone(g.env), "WORKER_ID="+id)})
		if err != nil {
			return nil, err
		}
		g.live = append(g.live, p)
	}
	return g, g.waitBalanced(ctx, limit)
}

// waitBalanced polls /status until every partition has one owner and the
// replicas' shares differ by at most one.
func (g *group) waitBalanced(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		owned, err := g.leads(ctx)
		if err == nil && balanced(owned, g.parts) {
			return nil
		}
		if time.Now().After(deadline) {
			var last []string
			for i, p := range g.live {
				var mine []int
				if owned != nil {
					mine = owned[i]
				}
				last = append(last, fmt.Sprintf("%s leads %v\n%s", p.Name, mine, p.LastLines(5)))
			}
			return fmt.Errorf("%d partitions not shared by %d replicas within %s (last error %v):\n%s",
				g.parts, len(g.live), limit, err, strings.Join(last, "\n"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leads is the partitions each live replica leads, by replica.
func (g *group) leads(ctx context.Context) ([][]int, error) {
	out := make([][]int, len(g.live))
	for i, p := range g.live {
		s, err := p.Status(ctx)
		if err != nil {
			return nil, err
		}
		if g.parts == 1 && s.Leader {
			out[i] = []int{0}
		}
		for _, l := range s.Leads {
			out[i] = append(out[i], l.Partition)
		}
	}
	return out, nil
}

func balanced(owned [][]int, parts int) bool {
	var all []int
	lo, hi := parts, 0
	for _, o := range owned {
		all = append(all, o...)
		lo, hi = min(lo, len(o)), max(hi, len(o))
	}
	slices.Sort(all)
	return len(all) == parts && len(slices.Compact(all)) == parts && (parts == 1 || hi-lo <= 1)
}

// open is the bench's own view of the fleet's queues, as `lockworker
// enqueue` has it: the backend on the replicas' configuration.
func (g *group) open() (*backend.Backend, error) {
	cfg, err := config.Load(config.Getenv(g.env))
	if err != nil {
		return nil, err
	}
	return backend.Open(cfg)
}
