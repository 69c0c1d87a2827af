package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// SentinelSpec describes a Sentinel group: a master, its replicas and the
// sentinels that watch them.
type SentinelSpec struct {
	// Master names the master group. Default "mymaster".
	Master string
	// Replicas is how many replicas the master has. Default 1.
	Replicas int
	// Sentinels is how many sentinels watch it; their quorum is a
	// majority. Default 3.
	Sentinels int
	// DownAfter is the sentinels' down-after-milliseconds: how long the
	// master may not answer before they fail it over by themselves.
	// Default 5s, long enough that a loaded machine does not trigger one;
	// Failover forces one at once.
	DownAfter time.Duration
	// AppendOnly turns on AOF (appendfsync always) on the data nodes.
	AppendOnly bool
	// Timeout bounds the start and each Failover; default 30s.
	Timeout time.Duration
}

// SentinelGroup is a running Sentinel group.
type SentinelGroup struct {
	// Master is the master group's name.
	Master string
	// Nodes are the data nodes: Nodes[0] was the master at start.
	Nodes []*Redis
	// Sentinels watch the master group.
	Sentinels []*Redis

	timeout time.Duration
}

// StartSentinelGroup starts the data nodes and the sentinels on free
// loopback ports and returns once every sentinel knows the master and its
// replicas are online.
func (f *Fleet) StartSentinelGroup(ctx context.Context, spec SentinelSpec) (*SentinelGroup, error) {
	spec.fill()
	g := &SentinelGroup{Master: spec.Master, timeout: spec.Timeout}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	master, err := f.StartRedis(ctx, RedisSpec{Name: "redis-master", AppendOnly: spec.AppendOnly, Args: fastSync})
	if err != nil {
		return nil, err
	}
	g.Nodes = append(g.Nodes, master)
	for i := range spec.Replicas {
		r, err := f.StartRedis(ctx, RedisSpec{
			Name: "redis-replica-" + strconv.Itoa(i), AppendOnly: spec.AppendOnly,
			Args: append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}, fastSync...),
		})
		if err != nil {
			return nil, err
		}
		g.Nodes = append(g.Nodes, r)
	}
	for i := range spec.Sentinels {
		s, err := f.startSentinel(ctx, "sentinel-"+strconv.Itoa(i), spec, master.Port)
		if err != nil {
			return nil, err
		}
		g.Sentinels = append(g.Sentinels, s)
	}
	if err := g.waitStable(ctx, master.Addr()); err != nil {
		return nil, err
	}
	return g, nil
}

func (spec *SentinelSpec) fill() {
	if spec.Master == "" {
		spec.Master = "mymaster"
	}
	if spec.Replicas <= 0 {
		spec.Replicas = 1
	}
	if spec.Sentinels <= 0 {
		spec.Sentinels = 3
	}
	if spec.DownAfter <= 0 {
		spec.DownAfter = 5 * time.Second
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 30 * time.Second
	}
}

// startSentinel writes the sentinel's configuration (Sentinel rewrites it,
// so it must be a file of its own) and starts redis-server --sentinel.
func (f *Fleet) startSentinel(ctx context.Context, name string, spec SentinelSpec, masterPort int) (*Redis, error) {
	dir, err := os.MkdirTemp("", "lockworker-sentinel-")
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f.removeOnClose(dir)
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s %[5]d\n",
		spec.Master, masterPort, spec.Sentinels/2+1, spec.DownAfter.Milliseconds(), spec.Timeout.Milliseconds())
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return f.StartRedis(ctx, RedisSpec{Name: name, Dir: dir, ConfigFile: conf, Args: []string{"--sentinel"}})
}

// SentinelURLs are the sentinels' redis:// URLs, for REDIS_URLS.
func (g *SentinelGroup) SentinelURLs() []string {
	out := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s.URL()
	}
	return out
}

// MasterAddr is the master's host:port as the first sentinel sees it.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	return g.masterAddr(ctx, g.Sentinels[0])
}

func (g *SentinelGroup) masterAddr(ctx context.Context, s *Redis) (string, error) {
	v, err := adminDo(ctx, s.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Master).StringSlice()
	if err != nil {
		return "", err
	}
	if len(v) != 2 {
		return "", fmt.Errorf("fleet: sentinel %s: no master %q", s.Name, g.Master)
	}
	return v[0] + ":" + v[1], nil
}

// Node returns the data node at addr (host:port), or nil.
func (g *SentinelGroup) Node(addr string) *Redis {
	for _, n := range g.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// Failover makes the sentinels promote a replica (SENTINEL FAILOVER, which
// needs no agreement and waits for no timeout) and returns the new
// master's address once every sentinel names it and it says it is the
// master. The old master, if alive, is still a master of its own then:
// Sentinel turns it into a replica some seconds later (WaitStable waits
// for that), and writes it takes meanwhile are lost.
func (g *SentinelGroup) Failover(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	old, err := g.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	if err := g.waitStable(ctx, old); err != nil {
		return "", err
	}
	err = retry(ctx, func() error {
		return adminDo(ctx, g.Sentinels[0].Addr(), "SENTINEL", "FAILOVER", g.Master).Err()
	})
	if err != nil {
		return "", fmt.Errorf("fleet: SENTINEL FAILOVER: %w", err)
	}
	var now string
	err = retry(ctx, func() error {
		for _, s := range g.Sentinels {
			if now, err = g.masterAddr(ctx, s); err != nil {
				return err
			}
			if now == old {
				return fmt.Errorf("sentinel %s still names %s", s.Name, old)
			}
		}
		_, err := onlineReplicas(ctx, now)
		return err
	})
	return now, err
}

// WaitStable waits until every sentinel names one master, that node says
// it is the master, and every other data node is its online replica.
func (g *SentinelGroup) WaitStable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	master, err := g.MasterAddr(ctx)
	if err != nil {
		return err
	}
	return g.waitStable(ctx, master)
}

// waitStable waits until every sentinel names master, master says it is
// one, and every other data node is its online replica.
func (g *SentinelGroup) waitStable(ctx context.Context, master string) error {
	return retry(ctx, func() error {
		for _, s := range g.Sentinels {
			got, err := g.masterAddr(ctx, s)
			if err != nil {
				return err
			}
			if got != master {
				return fmt.Errorf("sentinel %s names %s, not %s", s.Name, got, master)
			}
			if err := g.replicasOK(ctx, s); err != nil {
				return err
			}
		}
		n, err := onlineReplicas(ctx, master)
		if err != nil {
			return err
		}
		if n != len(g.Nodes)-1 {
			return fmt.Errorf("master %s has %d online replicas, want %d", master, n, len(g.Nodes)-1)
		}
		return nil
	})
}

// replicasOK checks that sentinel s sees every replica, none of them down
// or disconnected, so SENTINEL FAILOVER finds one to promote.
func (g *SentinelGroup) replicasOK(ctx context.Context, s *Redis) error {
	v, err := adminDo(ctx, s.Addr(), "SENTINEL", "REPLICAS", g.Master).Slice()
	if err != nil {
		return err
	}
	if len(v) != len(g.Nodes)-1 {
		return fmt.Errorf("sentinel %s sees %d replicas, want %d", s.Name, len(v), len(g.Nodes)-1)
	}
	for _, r := range v {
		if flags := field(r, "flags"); flags != "slave" {
			return fmt.Errorf("sentinel %s: replica flags %q", s.Name, flags)
		}
	}
	return nil
}

// field reads name from one entry of a SENTINEL REPLICAS reply, which is
// a map (RESP3) or a flat list of names and values (RESP2).
func field(entry any, name string) string {
	switch e := entry.(type) {
	case map[any]any:
		s, _ := e[name].(string)
		return s
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			if e[i] == name {
				s, _ := e[i+1].(string)
				return s
			}
		}
	}
	return ""
}
