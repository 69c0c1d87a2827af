package redislock

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
)

func TestNewRejectsBadConfig(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	nodes := func(n int) []redis.Scripter {
		s := make([]redis.Scripter, n)
		for i := range s {
			s[i] = c
		}
		return s
	}
	valid := func() Config { return Config{Nodes: nodes(1), Keys: keyspace.MustNew("k").Lease(), TTL: time.Second} }
	tests := []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" means accepted
	}{
		{"single node", func(*Config) {}, ""},
		{"three nodes", func(c *Config) { c.Nodes = nodes(3) }, ""},
		{"five nodes", func(c *Config) { c.Nodes = nodes(5) }, ""},
		{"no nodes", func(c *Config) { c.Nodes = nil }, "no nodes"},
		{"two nodes", func(c *Config) { c.Nodes = nodes(2) }, "survive no failure"},
		{"four nodes", func(c *Config) { c.Nodes = nodes(4) }, "odd number"},
		{"nil node", func(c *Config) { c.Nodes = []redis.Scripter{c.Nodes[0], nil, (*redis.Client)(nil)} }, "node 1 is nil"},
		{"names mismatch", func(c *Config) { c.NodeNames = []string{"a", "b"} }, "2 node names for 1 nodes"},
		{"no keys", func(c *Config) { c.Keys = keyspace.Lease{} }, "keys are required"},
		{"zero TTL", func(c *Config) { c.TTL = 0 }, "below the minimum"},
		{"negative TTL", func(c *Config) { c.TTL = -time.Second }, "below the minimum"},
		{"tiny TTL", func(c *Config) { c.TTL = time.Millisecond }, "below the minimum"},
		{"node timeout equals TTL", func(c *Config) { c.NodeTimeout = time.Second }, "must be below the TTL"},
		{"node timeout above TTL", func(c *Config) { c.NodeTimeout = 2 * time.Second }, "must be below the TTL"},
		{"negative node timeout", func(c *Config) { c.NodeTimeout = -1 }, "negative"},
		{"negative drift", func(c *Config) { c.DriftFactor = -0.1 }, "drift factor"},
		{"drift half", func(c *Config) { c.DriftFactor = 0.5 }, "drift factor"},
		{"drift max ok", func(c *Config) { c.DriftFactor = 0.49 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.mod(&cfg)
			l, err := New(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected a valid config: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q does not mention %q", err, tt.want)
			case tt.want == "" && l.Quorum() != len(cfg.Nodes)/2+1:
				t.Fatalf("quorum %d for %d nodes", l.Quorum(), len(cfg.Nodes))
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	l, err := New(Config{Nodes: []redis.Scripter{c}, Keys: keyspace.MustNew("k").Lease(), TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if l.nodeTimeout != time.Second || l.validity != 30*time.Second-300*time.Millisecond-2*time.Millisecond {
		t.Fatalf("defaults: node timeout %s, validity %s", l.nodeTimeout, l.validity)
	}
	if l.epochNode != 0 || l.Quorum() != 1 {
		t.Fatalf("single node is its own epoch authority with quorum 1: epoch node %d, quorum %d", l.epochNode, l.Quorum())
	}
	l, _ = New(Config{Nodes: []redis.Scripter{c}, Keys: keyspace.MustNew("k").Lease(), TTL: time.Second})
	if l.nodeTimeout != 100*time.Millisecond {
		t.Fatalf("node timeout %s, want TTL/10", l.nodeTimeout)
	}
}
