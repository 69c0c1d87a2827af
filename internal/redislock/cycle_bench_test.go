package redislock

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// BenchmarkCycle is one acquire+release on a single node, as peerbench's
// "1 node, 1 goroutine" row does it, with the server's CPU per cycle.
func BenchmarkCycle(b *testing.B) {
	s := redistest.Start(b, redistest.Options{})
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	b.Cleanup(func() { _ = c.Close() })
	l, err := New(Config{Nodes: []redis.Scripter{c}, Keys: keyspace.MustNew("lw:bench").Lease(), TTL: 10 * time.Second, NodeTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cycle := func() {
		lease, err := l.Acquire(ctx, "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 {
		cycle()
	}
	cpu0 := serverCPU(b, c)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		cycle()
	}
	b.StopTimer()
	b.ReportMetric(float64((serverCPU(b, c)-cpu0).Microseconds())/float64(b.N), "server-µs/op")
}

// serverCPU is the server's user+sys CPU time so far.
func serverCPU(b *testing.B, c *redis.Client) time.Duration {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
