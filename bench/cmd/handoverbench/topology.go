package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/keyspace"
)

// The Redis topologies the benchmark runs lockworker on (REDIS_MODE).
const (
	standalone = "standalone" // one redis-server
	sentinel   = "sentinel"   // a master, a replica and three sentinels
	rcluster   = "cluster"    // three masters with a replica each
)

// topology is one Redis topology started for the benchmark.
type topology struct {
	mode  string
	env   []string // REDIS_MODE, REDIS_URLS and the like
	where string   // for the report
	// failover forces a failover of the master that holds lockKey, and
	// candidate names the node it will promote. Nil for standalone.
	failover  func(ctx context.Context) error
	candidate func(ctx context.Context) (string, error)
	// settle waits until the master has its replica online again, so new
	// leaderships can start (REDIS_MIN_REPLICAS=1), and the nodes agree.
	settle func(ctx context.Context) error
}

// startTopology starts mode's servers in f; lockKey is the LOCK_KEY the
// replicas will use (Cluster fails over the master of its slot).
func startTopology(ctx context.Context, f *fleet.Fleet, mode, lockKey string, aof bool) (*topology, error) {
	switch mode {
	case standalone:
		r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis", AppendOnly: aof})
		if err != nil {
			return nil, err
		}
		return &topology{mode: mode, env: []string{"REDIS_URLS=" + r.URL()}, where: "one redis-server on " + r.Addr(),
			settle: func(context.Context) error { return nil }}, nil
	case sentinel:
		g, err := f.StartSentinelGroup(ctx, fleet.SentinelSpec{AppendOnly: aof})
		if err != nil {
			return nil, err
		}
		return sentinelTopology(g), nil
	case rcluster:
		c, err := f.StartCluster(ctx, fleet.ClusterSpec{AppendOnly: aof})
		if err != nil {
			return nil, err
		}
		return clusterTopology(c, keyspace.MustNew(lockKey).Key()), nil
	}
	return nil, fmt.Errorf("unknown mode %q (standalone, sentinel or cluster)", mode)
}

func sentinelTopology(g *fleet.SentinelGroup) *topology {
	return &topology{
		mode: sentinel,
		env: []string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=" + g.Master,
			"REDIS_URLS=" + strings.Join(g.SentinelURLs(), ",")},
		where:    fmt.Sprintf("Sentinel: a master, %d replica, %d sentinels", len(g.Nodes)-1, len(g.Sentinels)),
		failover: func(ctx context.Context) error { _, err := g.Failover(ctx); return err },
		candidate: func(ctx context.Context) (string, error) {
			m, err := g.MasterAddr(ctx)
			for _, n := range g.Nodes {
				if n.Addr() != m {
					return n.Addr(), err
				}
			}
			return "", fmt.Errorf("no replica of %s", m)
		},
		settle: g.WaitStable,
	}
}

// clusterTopology fails over the master of key's slot.
func clusterTopology(c *fleet.RedisCluster, key string) *topology {
	return &topology{
		mode:     rcluster,
		env:      []string{"REDIS_MODE=cluster", "REDIS_URLS=" + strings.Join(c.URLs(), ",")},
		where:    fmt.Sprintf("Cluster: %d nodes, 3 masters with a replica each", len(c.Nodes)),
		failover: func(ctx context.Context) error { _, err := c.Failover(ctx, key); return err },
		candidate: func(ctx context.Context) (string, error) {
			_, replicas, err := c.MasterOf(ctx, key)
			if err == nil && len(replicas) == 0 {
				err = fmt.Errorf("the master of %s has no replica", key)
			}
			if err != nil {
				return "", err
			}
			return replicas[0], nil
		},
		settle: c.WaitStable,
	}
}
