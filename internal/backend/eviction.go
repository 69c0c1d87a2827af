package backend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
)

// SafePolicy is the only maxmemory-policy under which Redis keeps what
// lockworker wrote: every other policy may evict the lock, the epoch, the
// fence, the pause flag or the queue itself once memory runs out (the
// volatile-* ones the lock first, since it has a TTL).
const SafePolicy = "noeviction"

// NodePolicy is one Redis master's maxmemory-policy, as INFO memory says.
type NodePolicy struct {
	Node   string // host:port; in sentinel mode the master group
	Policy string // "" when the node did not answer (Err)
	Err    error
}

// Safe reports whether the node answered and does not evict.
func (p NodePolicy) Safe() bool { return p.Err == nil && p.Policy == SafePolicy }

// EvictionPolicies reads the maxmemory-policy of every master the lock
// and the queue live on: each REDIS_URLS node (Redlock), the current
// master (Sentinel), every master of the Cluster. It reads INFO memory,
// not CONFIG GET, which managed services rename or disable. Replicas are
// not asked: they do not evict on their own (replica-ignore-maxmemory),
// and a promoted one is a master at the next check.
func (b *Backend) EvictionPolicies(ctx context.Context) []NodePolicy {
	var (
		mu  sync.Mutex
		out []NodePolicy
		wg  sync.WaitGroup
	)
	add := func(p NodePolicy) {
		mu.Lock()
		out = append(out, p)
		mu.Unlock()
	}
	for i, c := range b.Clients {
		if cc, ok := c.(*redis.ClusterClient); ok {
			err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				add(readPolicy(ctx, m, m.Options().Addr))
				return nil
			})
			if err != nil {
				add(NodePolicy{Node: b.probes[i].addr, Err: err})
			}
			continue
		}
		wg.Go(func() { add(readPolicy(ctx, c, b.probes[i].addr)) })
	}
	wg.Wait()
	return out
}

func readPolicy(ctx context.Context, c redis.Cmdable, node string) NodePolicy {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return NodePolicy{Node: node, Err: err}
	}
	policy, ok := infoField(info, "maxmemory_policy")
	if !ok {
		return NodePolicy{Node: node, Err: errors.New("INFO memory has no maxmemory_policy field")}
	}
	return NodePolicy{Node: node, Policy: policy}
}

// infoField is the value of field in an INFO reply ("field:value" lines).
func infoField(info, field string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// EvictionError is a Redis master whose maxmemory-policy evicts keys: no
// replica may lead on it. It is a configuration error (exit 2 at
// start-up): errors.Is(err, config.ErrInvalid) holds.
type EvictionError struct {
	Node   string
	Policy string
}

func (e *EvictionError) Error() string {
	return fmt.Sprintf("Redis at %s evicts keys (maxmemory-policy %s): the lock, the fencing epoch and acknowledged jobs "+
		"could vanish when memory runs out; set it to noeviction: `CONFIG SET maxmemory-policy noeviction` and "+
		"`CONFIG REWRITE`, or `maxmemory-policy noeviction` in redis.conf (on managed Redis, in its parameter group); "+
		"see docs/operations.md", e.Node, e.Policy)
}

// Is makes errors.Is(err, config.ErrInvalid) hold.
func (e *EvictionError) Is(target error) bool { return target == config.ErrInvalid }

// EvictionErr joins an *EvictionError for every node in policies that
// answered with a policy other than noeviction; nil when none did.
func EvictionErr(policies []NodePolicy) error {
	var errs []error
	for _, p := range policies {
		if p.Err == nil && p.Policy != SafePolicy {
			errs = append(errs, &EvictionError{Node: p.Node, Policy: p.Policy})
		}
	}
	return errors.Join(errs...)
}
