package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
)

// fastTimings settle a fleet in seconds (the handover benchmark's); the
// idle fleet runs with the defaults instead.
var fastTimings = []string{"LOCK_TTL=2s", "RENEW_INTERVAL=500ms", "RETRY_INTERVAL=1s"}

// group is one fleet of replicas sharing a LOCK_KEY and its PARTITIONS.
type group struct {
	f       *fleet.Fleet
	bin     string
	name    string // prefix of the replicas' names (and WORKER_ID)
	env     []string
	parts   int
	output  func(name string) io.Writer // the replicas' output; nil: kept only
	started int
	live    []*fleet.Process
}

// newGroup describes a fleet of parts partitions under lockKey on r; env
// comes on top of the Redis URL, the key and the count.
func newGroup(f *fleet.Fleet, bin string, r *fleet.Redis, lockKey string, parts int, env ...string) *group {
	base := []string{"REDIS_URLS=" + r.URL(), "LOCK_KEY=" + lockKey, "PARTITIONS=" + strconv.Itoa(parts)}
	return &group{f: f, bin: bin, name: lockKey, env: append(base, env...), parts: parts}
}

// add starts one more replica.
func (g *group) add() (*fleet.Process, error) {
	g.started++
	name := fmt.Sprintf("%s-%d", g.name, g.started)
	spec := fleet.Spec{Name: name, Path: g.bin, Env: append(slices.Clone(g.env), "WORKER_ID="+name)}
	if g.output != nil {
		spec.Output = g.output(name)
	}
	p, err := g.f.Start(spec)
	if err != nil {
		return nil, err
	}
	g.live = append(g.live, p)
	return p, nil
}

// drop forgets p (stopped or killed by the caller).
func (g *group) drop(p *fleet.Process) {
	g.live = slices.DeleteFunc(g.live, func(q *fleet.Process) bool { return q == p })
}

// startBalanced starts n replicas and waits until they share the
// partitions.
func (g *group) startBalanced(ctx context.Context, n int, limit time.Duration) error {
	for range n {
		if _, err := g.add(); err != nil {
			return err
		}
	}
	return g.waitBalanced(ctx, limit)
}

// leads reads every live replica's /status: the partitions each leads.
func (g *group) leads(ctx context.Context) (map[*fleet.Process][]int, error) {
	out := map[*fleet.Process][]int{}
	for _, p := range g.live {
		s, err := p.Status(ctx)
		if err != nil {
			return nil, err
		}
		if g.parts == 1 {
			if s.Leader {
				out[p] = []int{0}
			}
			continue
		}
		for _, l := range s.Leads {
			out[p] = append(out[p], l.Partition)
		}
	}
	return out, nil
}

// balanced says every partition has one owner among live and the most
// and the fewest partitions a live replica owns differ by at most one
// (with one partition: one leader).
func balanced(owned map[*fleet.Process][]int, live []*fleet.Process, parts int) bool {
	var all []int
	lo, hi := parts, 0
	for _, p := range live {
		all = append(all, owned[p]...)
		lo, hi = min(lo, len(owned[p])), max(hi, len(owned[p]))
	}
	slices.Sort(all)
	return len(all) == parts && len(slices.Compact(all)) == parts && (parts == 1 || hi-lo <= 1)
}

// waitBalanced polls /status until the live replicas share the partitions.
func (g *group) waitBalanced(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		owned, err := g.leads(ctx)
		if err == nil && balanced(owned, g.live, g.parts) {
			return nil
		}
		if time.Now().After(deadline) {
			var last []string
			for _, p := range g.live {
				last = append(last, fmt.Sprintf("%s leads %v\n%s", p.Name, owned[p], p.LastLines(5)))
			}
			return fmt.Errorf("%s: %d partitions not shared by %d replicas within %s (last error %v):\n%s",
				g.name, g.parts, len(g.live), limit, err, strings.Join(last, "\n"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// most is the live replica that owns the most partitions.
func most(owned map[*fleet.Process][]int, live []*fleet.Process) *fleet.Process {
	var best *fleet.Process
	for _, p := range live {
		if best == nil || len(owned[p]) > len(owned[best]) {
			best = p
		}
	}
	return best
}

// producer is the bench's own view of a fleet's queues, as `lockworker
// enqueue` has it: the backend on the same configuration.
type producer struct {
	b     *backend.Backend
	parts int
}

func openProducer(ctx context.Context, g *group) (*producer, error) {
	vars := map[string]string{}
	for _, kv := range g.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		return nil, err
	}
	b, err := backend.Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := b.CheckPartitions(ctx, cfg.RedisNodeTimeout, nil); err != nil {
		_ = b.Close()
		return nil, err
	}
	return &producer{b: b, parts: g.parts}, nil
}

func (p *producer) Close() error { return p.b.Close() }

// pause pauses (or resumes) every partition's queue, all at once.
func (p *producer) pause(ctx context.Context, on bool) error {
	errs := make(chan error, p.parts)
	for _, q := range p.b.Queues.Queues() {
		go func() {
			if on {
				errs <- q.Pause(ctx)
			} else {
				errs <- q.Resume(ctx)
			}
		}()
	}
	var all []error
	for range p.parts {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// committed sums the partitions' committed counters: one HGET each, in
// one pipeline, so polling it costs Redis little beside the work.
func (p *producer) committed(ctx context.Context) (int64, error) {
	c := p.b.Clients[0]
	cmds := make([]*redis.StringCmd, p.parts)
	_, err := c.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i := range p.parts {
			cmds[i] = pl.HGet(ctx, p.b.Keys.Partition(i, p.parts).Counters(), "committed")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	var sum int64
	for _, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// waitCommitted polls the committed counters every interval until they
// reach want, and returns when they were first seen there.
func (p *producer) waitCommitted(ctx context.Context, want int64, interval, limit time.Duration) (time.Time, int, error) {
	deadline := time.Now().Add(limit)
	polls := 0
	for {
		n, err := p.committed(ctx)
		polls++
		now := time.Now()
		if err == nil && n >= want {
			return now, polls, nil
		}
		if now.After(deadline) {
			return time.Time{}, polls, fmt.Errorf("%d of %d jobs committed after %s (last error %v)", n, want, limit, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, polls, ctx.Err()
		case <-time.After(interval):
		}
	}
}
