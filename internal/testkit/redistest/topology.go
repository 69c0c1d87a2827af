package redistest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// StartReplica starts a replica of s on a free loopback port and returns
// once s lists it as an online replica. It is stopped at test end.
func StartReplica(t testing.TB, s *Server) *Server {
	t.Helper()
	r := Start(t, Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Port)}})
	c := s.Client()
	poll.Until(t, 30*time.Second, "replica "+r.String()+" online on "+s.String(), func() bool {
		role, err := c.Do(context.Background(), "ROLE").Slice()
		if err != nil || len(role) != 3 {
			return false
		}
		list, _ := role[2].([]any)
		return len(list) == 1
	})
	return r
}

// StartSentinelGroup starts a Sentinel group on free loopback ports (by
// default a master, one replica and three sentinels; see
// fleet.SentinelSpec) and stops it at test end.
func StartSentinelGroup(t testing.TB, spec fleet.SentinelSpec) *fleet.SentinelGroup {
	t.Helper()
	skipShort(t)
	f := fleet.New(context.Background())
	t.Cleanup(func() { _ = f.Close() })
	g, err := f.StartSentinelGroup(context.Background(), spec)
	if err != nil {
		t.Fatalf("redistest: sentinel group: %v (make test installs redis-server)", err)
	}
	return g
}

// StartCluster starts a Redis Cluster on free loopback ports (by default
// three masters with one replica each; see fleet.ClusterSpec) and stops it
// at test end.
func StartCluster(t testing.TB, spec fleet.ClusterSpec) *fleet.RedisCluster {
	t.Helper()
	skipShort(t)
	f := fleet.New(context.Background())
	t.Cleanup(func() { _ = f.Close() })
	c, err := f.StartCluster(context.Background(), spec)
	if err != nil {
		t.Fatalf("redistest: cluster: %v (make test installs redis-server and redis-cli)", err)
	}
	return c
}
