package redislock

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/replicas"
)

// MinTTL is the shortest lease TTL New accepts.
const MinTTL = 10 * time.Millisecond

// Config configures a Locker. Clients passed in Nodes and Epoch must be
// built with MaxRetries: -1 and ContextTimeoutEnabled: true (see the
// package documentation). An Epoch that is a *redis.Client (one node, or
// Sentinel's failover client) or a *redis.ClusterClient gets its bumps
// WAITed for by its master's replicas; other Scripters do not.
type Config struct {
	// Nodes are the independent masters, one client each. Required. One node
	// is single-node mode (quorum 1); otherwise the count must be odd and at
	// least 3 (Redlock, quorum N/2+1).
	Nodes []redis.Scripter
	// Epoch is the fencing epoch authority: the Redis whose epoch counter (keyspace.Lease.Epoch)
	// hands out tokens. It must be persistent (AOF) or tokens can go back
	// after a restart. Default Nodes[0].
	Epoch redis.Scripter
	// Keys names the lease's keys and channel (package keyspace): the lock,
	// its epoch, tag and fence, and the release channel. Required.
	Keys keyspace.Lease
	// TTL is the lease time to live on the nodes, in whole milliseconds.
	// Required, at least MinTTL.
	TTL time.Duration
	// DriftFactor bounds clock drift between this process and the nodes, as
	// a fraction of TTL: drift = TTL*DriftFactor + 2ms, and a lease is valid
	// for TTL - elapsed - drift. Must be in [0, 0.5); 0 means the default 0.01.
	DriftFactor float64
	// NodeTimeout bounds each command to each node. Default min(TTL/10, 1s);
	// must be below TTL.
	NodeTimeout time.Duration
	// Now reads the clock; its monotonic reading is what deadlines use.
	// Default time.Now.
	Now func() time.Time
	// NodeNames name the nodes in errors (host:port, never a password).
	// Optional; when set, one per node. Default "node0", "node1", ...
	NodeNames []string
	// MinReplicas is how many replicas of the epoch authority's master must
	// acknowledge an epoch bump before its token is used, even when fewer
	// are online: a master that lost its replicas (a failover under way,
	// the old master still taking writes) then cannot hand out a token a
	// promoted replica would hand out again. Default 0: only the online
	// replicas are waited for, and none when there are none.
	MinReplicas int
	// ReplicaCounts caches the masters' online replicas (package
	// replicas); share one with the other locks and the job queues.
	// Default: the Locker's own.
	ReplicaCounts *replicas.Counts
	// ShardedNotices publishes release notices with SPUBLISH (Redis
	// Cluster's sharded pub/sub: the channel shares the key's slot) instead
	// of PUBLISH. Default false.
	ShardedNotices bool
}

func (cfg *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("redislock: "+format, args...)) }
	cfg.checkNodes(bad)
	if cfg.Keys.IsZero() {
		bad("keys are required")
	}
	cfg.checkTimes(bad)
	if cfg.MinReplicas < 0 {
		bad("min replicas %d is negative", cfg.MinReplicas)
	}
	return errors.Join(errs...)
}

// checkNodes: one node, or an odd number of at least 3, none nil, and as
// many names as nodes.
func (cfg *Config) checkNodes(bad func(format string, args ...any)) {
	switch n := len(cfg.Nodes); {
	case n == 0:
		bad("no nodes: give one node, or an odd number of at least 3 for Redlock")
	case n == 2:
		bad("2 nodes survive no failure (quorum 2 of 2): use 1 node, or an odd number of at least 3")
	case n > 1 && n%2 == 0:
		bad("%d nodes: Redlock needs an odd number of nodes (an even number adds no fault tolerance)", n)
	}
	for i, n := range cfg.Nodes {
		if isNil(n) {
			bad("node %d is nil", i)
		}
	}
	if cfg.NodeNames != nil && len(cfg.NodeNames) != len(cfg.Nodes) {
		bad("%d node names for %d nodes", len(cfg.NodeNames), len(cfg.Nodes))
	}
}

// checkTimes: a TTL of at least MinTTL, a drift factor in [0, 0.5), and
// a node timeout that is not negative and below the TTL.
func (cfg *Config) checkTimes(bad func(format string, args ...any)) {
	if cfg.TTL < MinTTL {
		bad("TTL %s is below the minimum %s", cfg.TTL, MinTTL)
	}
	if math.IsNaN(cfg.DriftFactor) || cfg.DriftFactor < 0 || cfg.DriftFactor >= 0.5 {
		bad("drift factor %v is outside [0, 0.5)", cfg.DriftFactor)
	}
	if cfg.NodeTimeout < 0 {
		bad("node timeout %s is negative", cfg.NodeTimeout)
	} else if cfg.TTL >= MinTTL && cfg.NodeTimeout >= cfg.TTL {
		bad("node timeout %s must be below the TTL %s", cfg.NodeTimeout, cfg.TTL)
	}
}

func (cfg *Config) setDefaults() {
	if cfg.DriftFactor == 0 {
		cfg.DriftFactor = 0.01
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = min(cfg.TTL/10, time.Second)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ReplicaCounts == nil {
		cfg.ReplicaCounts = replicas.NewCounts(cfg.Now)
	}
	if cfg.NodeNames == nil {
		cfg.NodeNames = make([]string, len(cfg.Nodes))
		for i := range cfg.Nodes {
			cfg.NodeNames[i] = "node" + strconv.Itoa(i)
		}
	}
}

// isNil reports whether an interface is nil or holds a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// same reports whether a and b are the same client, without panicking on
// uncomparable dynamic types.
func same(a, b redis.Scripter) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}
