package daemon

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
)

// errPolicyUnchecked refuses an acquire before any Redis master told its
// maxmemory-policy: Redis has not answered yet.
var errPolicyUnchecked = errors.New("daemon: the Redis eviction policy is not checked yet: Redis has not answered")

// evictionCheckInterval is how often the policy of every master is read
// again: four renew intervals, within [1s, 15s] (15s by default). A policy
// changed at run time is seen within one interval.
func evictionCheckInterval(cfg config.Config) time.Duration {
	return min(max(4*cfg.RenewInterval, time.Second), 15*time.Second)
}

// evictionGuard keeps this replica from leading on a Redis that evicts
// keys (maxmemory-policy other than noeviction): an evicted lock lets a
// second leader in, an evicted epoch hands a token out twice, an evicted
// stream loses acknowledged jobs. Every lane asks it before each acquire
// (allow, through mayLead), and it tells the lanes when its verdict
// changes (changed): a lane that leads then ends its work, and so its
// leadership; one that waits on it tries at once. It reads every master
// at start-up and every interval.
type evictionGuard struct {
	read     func(ctx context.Context) []backend.NodePolicy
	interval time.Duration
	timeout  time.Duration // per check
	log      *slog.Logger
	changed  func() // the verdict changed (safe or not): the lanes ask again

	mu     sync.Mutex
	known  map[string]string // node -> its last policy read
	failed map[string]error  // node -> why its last read failed
	unsafe error             // the nodes that evict (EvictionErrors), or errPolicyUnchecked; nil: safe
}

func newEvictionGuard(read func(ctx context.Context) []backend.NodePolicy, interval, timeout time.Duration, log *slog.Logger) *evictionGuard {
	return &evictionGuard{read: read, interval: interval, timeout: timeout, log: log, changed: func() {},
		known: map[string]string{}, failed: map[string]error{}, unsafe: errPolicyUnchecked}
}

// Run checks every interval until ctx is done, and returns nil.
func (g *evictionGuard) Run(ctx context.Context) error {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		g.check(ctx)
	}
}

// check reads every master once and returns the EvictionErrors of those
// that evict (nil when none does, or none answered). A master that does
// not answer keeps the policy it had: it holds no new lock while it does
// not answer, and its next answer counts.
func (g *evictionGuard) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	policies := g.read(ctx)
	g.mu.Lock()
	was := g.unsafe
	bad := g.take(policies)
	now := g.unsafe
	g.mu.Unlock()
	g.say(was, now, bad)
	if (was == nil) != (now == nil) {
		g.changed()
	}
	return bad
}

// take records a read and returns the EvictionErrors of the masters known
// to evict; g.unsafe becomes the verdict. g.mu must be held.
func (g *evictionGuard) take(policies []backend.NodePolicy) error {
	for _, p := range policies {
		if p.Err != nil {
			g.failed[p.Node] = p.Err
			continue
		}
		delete(g.failed, p.Node)
		g.known[p.Node] = p.Policy
	}
	now := make([]backend.NodePolicy, 0, len(g.known))
	for node, policy := range g.known {
		now = append(now, backend.NodePolicy{Node: node, Policy: policy})
	}
	slices.SortFunc(now, func(a, b backend.NodePolicy) int { return cmp.Compare(a.Node, b.Node) })
	bad := backend.EvictionErr(now)
	g.unsafe = bad
	if len(g.known) == 0 {
		g.unsafe = errPolicyUnchecked
	}
	return bad
}

// say logs a change of verdict once: masters that evict (again, or
// others than before), or every master safe again after one evicted.
func (g *evictionGuard) say(was, now, bad error) {
	switch {
	case bad != nil && (was == nil || was == errPolicyUnchecked || was.Error() != now.Error()):
		g.log.Error("Redis evicts keys: this replica will not lead until every master runs maxmemory-policy noeviction",
			"err", bad)
	case now == nil && was != nil && was != errPolicyUnchecked:
		g.log.Info("every Redis master runs maxmemory-policy noeviction again: this replica may lead")
	}
}

// allow is nil when this replica may lead: every master it has read runs
// noeviction. Otherwise why not.
func (g *evictionGuard) allow() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unsafe
}

// Policies is what the guard knows of each master, for /status and the
// metrics: the last policy read, and the error of the last read where it
// failed.
func (g *evictionGuard) policies() []backend.NodePolicy {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]backend.NodePolicy, 0, len(g.known)+len(g.failed))
	for node, policy := range g.known {
		out = append(out, backend.NodePolicy{Node: node, Policy: policy, Err: g.failed[node]})
	}
	for node, err := range g.failed {
		if _, ok := g.known[node]; !ok {
			out = append(out, backend.NodePolicy{Node: node, Err: err})
		}
	}
	slices.SortFunc(out, func(a, b backend.NodePolicy) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// byNode is each master's last read policy, for the metrics.
func (g *evictionGuard) byNode() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.known)
}
