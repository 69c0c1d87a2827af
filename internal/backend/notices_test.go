package backend

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestNoticesAcrossSentinelFailover: release and enqueue notices reach a
// watcher through the master, and again after SENTINEL FAILOVER, once the
// watcher has followed +switch-master to the new master.
func TestNoticesAcrossSentinelFailover(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinelGroup(t, fleet.SentinelSpec{})
	b := open(t, "REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER="+g.Master, "REDIS_URLS="+strings.Join(g.SentinelURLs(), ","))
	testNoticesAcrossFailover(t, b, func(ctx context.Context) error { _, err := g.Failover(ctx); return err })
}

// TestNoticesAcrossClusterFailover: the same in Redis Cluster with sharded
// pub/sub: the old master ends the subscription (sunsubscribe) when it
// loses the slot, and the watcher subscribes again.
func TestNoticesAcrossClusterFailover(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, fleet.ClusterSpec{})
	b := open(t, "REDIS_MODE=cluster", "REDIS_URLS="+strings.Join(c.URLs(), ","))
	testNoticesAcrossFailover(t, b, func(ctx context.Context) error {
		_, err := c.Failover(ctx, b.Keys.Key())
		return err
	})
}

// calls counts a watcher's handler calls per channel.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) handler(ch string) func() {
	return func() { c.mu.Lock(); c.n[ch]++; c.mu.Unlock() }
}

func (c *calls) get(ch string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[ch]
}

func testNoticesAcrossFailover(t *testing.T, b *Backend, failover func(context.Context) error) {
	t.Helper()
	released, enqueued := b.Keys.Lease().ReleasedChannel(), b.Queues.Queues()[0].EnqueuedChannel()
	got := &calls{n: map[string]int{}}
	logs := &tail.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		notice.Watch(ctx, b.Sources()[0], map[string]func(){released: got.handler(released), enqueued: got.handler(enqueued)},
			slog.New(slog.NewTextHandler(logs, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })

	// notify sends one notice on each channel, through the daemon's own
	// paths (a release, an enqueue), until each reaches the watcher:
	// right after a subscription is made, a notice may still be lost.
	notify := func(when string) {
		t.Helper()
		r0, e0 := got.get(released), got.get(enqueued)
		poll.Until(t, 20*time.Second, "a release and an enqueue notice "+when, func() bool {
			if lease, err := b.Lockers[0].Acquire(ctx, "w", 0); err == nil {
				_ = b.Lockers[0].Release(ctx, lease)
			}
			_, _ = b.Queues.Queues()[0].Enqueue(ctx, "", []byte("x"))
			deadline := time.Now().Add(300 * time.Millisecond)
			for time.Now().Before(deadline) && (got.get(released) == r0 || got.get(enqueued) == e0) {
				time.Sleep(poll.Interval)
			}
			return got.get(released) > r0 && got.get(enqueued) > e0
		})
	}
	notify("before the failover")
	if err := failover(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait for the watcher to subscribe again (its handlers are called
	// then too), so that what follows counts only messages.
	poll.Until(t, 20*time.Second, "the watcher's new subscription", func() bool {
		return strings.Contains(logs.String(), "notices: subscribing again") &&
			strings.Count(logs.String(), "re-subscribed") >= 2
	})
	notify("after the failover")
}
