package fleet

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClusterSpec describes a Redis Cluster to start.
type ClusterSpec struct {
	// Masters is how many masters share the slots. Default 3.
	Masters int
	// ReplicasPerMaster is how many replicas each master has. Default 1.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a node may not answer
	// before the others fail it over by themselves. Default 5s, long
	// enough that a loaded machine does not trigger one; Failover forces
	// one at once.
	NodeTimeout time.Duration
	// AppendOnly turns on AOF (appendfsync always) on every node.
	AppendOnly bool
	// Timeout bounds the start and each Failover; default 30s.
	Timeout time.Duration
}

// RedisCluster is a running Redis Cluster.
type RedisCluster struct {
	// Nodes are every node, masters and replicas.
	Nodes []*Redis

	replicas    int
	timeout     time.Duration
	nodeTimeout time.Duration
	voted       time.Time // the last Failover's votes
}

// StartCluster starts the nodes on free loopback ports, joins them with
// redis-cli --cluster create and returns once every node says the cluster
// is ok and every master has its replicas online.
func (f *Fleet) StartCluster(ctx context.Context, spec ClusterSpec) (*RedisCluster, error) {
	spec.fill()
	c := &RedisCluster{replicas: spec.ReplicasPerMaster, timeout: spec.Timeout, nodeTimeout: spec.NodeTimeout}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("fleet: redis-cli not found in PATH (it comes with redis-server): %w", err)
	}
	args := []string{"--cluster", "create"}
	for i := range spec.Masters * (1 + spec.ReplicasPerMaster) {
		r, err := f.StartRedis(ctx, RedisSpec{
			Name: "redis-cluster-" + strconv.Itoa(i), AppendOnly: spec.AppendOnly,
			Args: append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.FormatInt(spec.NodeTimeout.Milliseconds(), 10)}, fastSync...),
		})
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, r)
		args = append(args, r.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(spec.ReplicasPerMaster), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fleet: redis-cli --cluster create: %w\n%s", err, out)
	}
	return c, c.waitStable(ctx)
}

func (spec *ClusterSpec) fill() {
	if spec.Masters <= 0 {
		spec.Masters = 3
	}
	if spec.ReplicasPerMaster < 0 {
		spec.ReplicasPerMaster = 0
	} else if spec.ReplicasPerMaster == 0 {
		spec.ReplicasPerMaster = 1
	}
	if spec.NodeTimeout <= 0 {
		spec.NodeTimeout = 5 * time.Second
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 30 * time.Second
	}
}

// URLs are every node's redis:// URL, for REDIS_URLS (seeds).
func (c *RedisCluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// Node returns the node at addr (host:port), or nil.
func (c *RedisCluster) Node(addr string) *Redis {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// MasterOf is the address of the master serving key's slot, as the first
// node sees it, and of its online replicas, as it says.
func (c *RedisCluster) MasterOf(ctx context.Context, key string) (master string, replicas []string, err error) {
	if master, err = c.masterOf(ctx, c.Nodes[0].Addr(), key); err != nil {
		return "", nil, err
	}
	role, err := adminDo(ctx, master, "ROLE").Slice()
	if err != nil || len(role) != 3 {
		return "", nil, fmt.Errorf("fleet: ROLE of %s: %v %w", master, role, err)
	}
	list, _ := role[2].([]any)
	for _, r := range list {
		if f, _ := r.([]any); len(f) >= 2 {
			host, _ := f[0].(string)
			port, _ := f[1].(string)
			replicas = append(replicas, host+":"+port)
		}
	}
	return master, replicas, nil
}

// masterOf asks the node at via which master serves key's slot.
func (c *RedisCluster) masterOf(ctx context.Context, via, key string) (string, error) {
	slot, err := adminDo(ctx, via, "CLUSTER", "KEYSLOT", key).Int64()
	if err != nil {
		return "", err
	}
	v, err := adminDo(ctx, via, "CLUSTER", "SLOTS").Slice()
	if err != nil {
		return "", err
	}
	for _, r := range v {
		rng, _ := r.([]any)
		if len(rng) < 3 {
			continue
		}
		lo, _ := rng[0].(int64)
		hi, _ := rng[1].(int64)
		if slot < lo || slot > hi {
			continue
		}
		if node, _ := rng[2].([]any); len(node) >= 2 {
			host, _ := node[0].(string)
			port, _ := node[1].(int64)
			return host + ":" + strconv.FormatInt(port, 10), nil
		}
	}
	return "", fmt.Errorf("fleet: %s names no master for slot %d", via, slot)
}

// Failover runs CLUSTER FAILOVER on a replica of key's master (a manual
// failover: the master stops its clients until the replica has caught up,
// so no acknowledged write is lost) and returns the new master's address
// once every node sees it serve the slot and the old master is its online
// replica. A master votes for the failover of a given master at most once
// per 2 × cluster-node-timeout, so Failover first waits out that long since
// the previous one (see WaitStable).
func (c *RedisCluster) Failover(ctx context.Context, key string) (string, error) {
	if err := c.WaitStable(ctx); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	defer func() { c.voted = time.Now() }()
	old, replicas, err := c.MasterOf(ctx, key)
	if err != nil {
		return "", err
	}
	if len(replicas) == 0 {
		return "", fmt.Errorf("fleet: the master of %q has no replica to fail over to", key)
	}
	next := replicas[0]
	// A healthy manual failover takes milliseconds. One asked for right
	// after the cluster formed can get lost (the replica's bus link to its
	// master is not up yet; Redis then gives up after 5s): ask again,
	// waiting longer each time, but never once the replica says it is the
	// master: then only the other nodes' views have to catch up.
	wait := 2 * time.Second
	err = retry(ctx, func() error {
		if c.seenServing(ctx, next, key) == nil {
			return nil
		}
		if _, err := onlineReplicas(ctx, next); err == nil {
			return fmt.Errorf("waiting for every node to see %s as the master", next)
		}
		if err := adminDo(ctx, next, "CLUSTER", "FAILOVER").Err(); err != nil {
			return fmt.Errorf("CLUSTER FAILOVER on %s: %w", next, err)
		}
		round, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		wait = min(2*wait, 8*time.Second)
		return retry(round, func() error { _, err := onlineReplicas(round, next); return err })
	})
	if err != nil {
		return "", fmt.Errorf("fleet: failover of %q from %s to %s: %w", key, old, next, err)
	}
	return next, c.waitStable(ctx)
}

// view checks that n knows every node and its bus link to each is up (a
// manual failover needs the replica's link to its master and the masters'
// votes), and returns the masters n sees, sorted: after a failover the
// masters vote only once every one of them sees the replica as a replica.
func (c *RedisCluster) view(ctx context.Context, n *Redis) (string, error) {
	nodes, err := adminDo(ctx, n.Addr(), "CLUSTER", "NODES").Text()
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	if len(lines) != len(c.Nodes) {
		return "", fmt.Errorf("%s knows %d nodes, want %d", n.Name, len(lines), len(c.Nodes))
	}
	var masters []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 8 || f[7] != "connected" || strings.ContainsAny(f[2], "?") ||
			strings.Contains(f[2], "handshake") || strings.Contains(f[2], "fail") || strings.Contains(f[2], "noaddr") {
			return "", fmt.Errorf("%s: node not linked: %s", n.Name, l)
		}
		if strings.Contains(f[2], "master") {
			masters = append(masters, f[0])
		}
	}
	slices.Sort(masters)
	return strings.Join(masters, ","), nil
}

// seenServing checks that every node sees master serve key's slot.
func (c *RedisCluster) seenServing(ctx context.Context, master, key string) error {
	for _, n := range c.Nodes {
		m, err := c.masterOf(ctx, n.Addr(), key)
		if err != nil {
			return err
		}
		if m != master {
			return fmt.Errorf("%s sees %s serve %q, not %s", n.Name, m, key, master)
		}
	}
	return nil
}

// WaitStable waits until every node says cluster_state:ok, they agree on
// which nodes are masters, and every master has its replicas online; and,
// after a Failover, until the masters may vote for another one (2 ×
// cluster-node-timeout since the last one).
func (c *RedisCluster) WaitStable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+2*c.nodeTimeout)
	defer cancel()
	if wait := time.Until(c.voted.Add(2*c.nodeTimeout + 500*time.Millisecond)); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return c.waitStable(ctx)
}

// waitStable is WaitStable without its own bound.
func (c *RedisCluster) waitStable(ctx context.Context) error {
	return retry(ctx, func() error {
		masters, views := 0, map[string]bool{}
		for _, n := range c.Nodes {
			info, err := adminDo(ctx, n.Addr(), "CLUSTER", "INFO").Text()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster not ok", n.Name)
			}
			v, err := c.view(ctx, n)
			if err != nil {
				return err
			}
			views[v] = true
			role, err := adminDo(ctx, n.Addr(), "ROLE").Slice()
			if err != nil || len(role) == 0 || role[0] != "master" {
				continue // a replica, or not answering
			}
			masters++
			if got, err := onlineReplicas(ctx, n.Addr()); err != nil || got < c.replicas {
				return fmt.Errorf("master %s has %d online replicas, want %d (%v)", n.Name, got, c.replicas, err)
			}
		}
		if want := len(c.Nodes) / (1 + c.replicas); masters != want {
			return fmt.Errorf("%d masters, want %d", masters, want)
		}
		if len(views) != 1 {
			return fmt.Errorf("the nodes disagree on which are masters: %v", views)
		}
		return nil
	})
}
