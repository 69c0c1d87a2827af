package notice

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// healthCheck is how often an idle subscription is PINGed, so a silently
// dead connection is noticed and re-established.
const healthCheck = 5 * time.Second

// Watch subscribes c to every channel in handlers and calls the channel's
// handler for each message, and every handler after a re-subscription,
// until ctx is done. Handlers run on Watch's goroutine and must not block
// (coalesce in them). log may be nil.
func Watch(ctx context.Context, c *redis.Client, handlers map[string]func(), log *slog.Logger) {
	if len(handlers) == 0 {
		return
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ps := c.Subscribe(ctx, slices.Sorted(maps.Keys(handlers))...)
	defer func() { _ = ps.Close() }()
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(healthCheck))
	subscribed := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Message:
				if h := handlers[m.Channel]; h != nil {
					h()
				}
			case *redis.Subscription:
				if m.Kind != "subscribe" {
					continue
				}
				if subscribed[m.Channel] {
					log.Info("notices: re-subscribed, messages during the gap are lost", "channel", m.Channel)
					if h := handlers[m.Channel]; h != nil {
						h()
					}
				}
				subscribed[m.Channel] = true
			}
		}
	}
}
