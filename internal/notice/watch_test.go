package notice

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter counts calls per channel.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) handler(ch string) func() {
	return func() {
		c.mu.Lock()
		c.n[ch]++
		c.mu.Unlock()
	}
}

func (c *counter) get(ch string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[ch]
}

// TestWatch: each message calls its channel's handler and no other; after
// the server restarts, go-redis re-subscribes and every handler is called,
// since messages in the gap are lost.
func TestWatch(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	admin := s.Client()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	calls := &counter{n: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, Source{Subscribe: c.Subscribe}, map[string]func(){"a": calls.handler("a"), "b": calls.handler("b")}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	subscribed := func() bool {
		n, err := admin.PubSubNumSub(t.Context(), "a", "b").Result()
		return err == nil && n["a"] == 1 && n["b"] == 1
	}
	poll.Until(t, 5*time.Second, "both subscriptions", subscribed)

	for range 3 {
		admin.Publish(t.Context(), "a", "x")
	}
	poll.Until(t, 5*time.Second, "three calls on a", func() bool { return calls.get("a") == 3 })
	if n := calls.get("b"); n != 0 {
		t.Fatalf("b called %d times for messages on a", n)
	}

	s.Restart()
	poll.Until(t, 15*time.Second, "a call on each channel after the re-subscription", func() bool {
		return calls.get("a") == 4 && calls.get("b") == 1
	})
	poll.Until(t, 5*time.Second, "both subscriptions again", subscribed)
}
