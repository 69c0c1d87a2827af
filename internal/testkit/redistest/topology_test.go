package redistest

import (
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
)

// TestSentinelGroupFailover: the group starts with the master first, and a
// forced failover makes the replica the master and the old master its
// replica.
func TestSentinelGroupFailover(t *testing.T) {
	t.Parallel() // each starts servers of its own
	g := StartSentinelGroup(t, fleet.SentinelSpec{})
	ctx := t.Context()
	before, err := g.MasterAddr(ctx)
	if err != nil || before != g.Nodes[0].Addr() {
		t.Fatalf("master %q (%v), want %s", before, err, g.Nodes[0].Addr())
	}
	start := time.Now()
	after, err := g.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinel failover took %s", time.Since(start))
	if after != g.Nodes[1].Addr() {
		t.Fatalf("new master %s, want the replica %s", after, g.Nodes[1].Addr())
	}
	start = time.Now()
	if err := g.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the old master rejoined as a replica after %s", time.Since(start))
}

// TestClusterFailover: three masters with a replica each; a manual
// failover moves a key's slot to the replica.
func TestClusterFailover(t *testing.T) {
	t.Parallel() // each starts servers of its own
	start := time.Now()
	c := StartCluster(t, fleet.ClusterSpec{})
	t.Logf("cluster start took %s", time.Since(start))
	ctx := t.Context()
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	before, replicas, err := c.MasterOf(ctx, "{k}")
	if err != nil || len(replicas) != 1 {
		t.Fatalf("master %s replicas %v: %v", before, replicas, err)
	}
	start = time.Now()
	after, err := c.Failover(ctx, "{k}")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster failover took %s", time.Since(start))
	if after != replicas[0] {
		t.Fatalf("new master %s, want %s", after, replicas[0])
	}
	if now, again, _ := c.MasterOf(ctx, "{k}"); now != after || len(again) != 1 || again[0] != before {
		t.Fatalf("after failover: master %s replicas %v; want %s with replica %s", now, again, after, before)
	}
}
