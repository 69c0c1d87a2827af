package notice

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
)

// healthCheck is how often an idle subscription is PINGed, so a silently
// dead connection is noticed and re-established.
const healthCheck = 5 * time.Second

// resubscribe paces new subscriptions after the server ended one.
var resubscribe = backoff.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second}

// Subscribe opens a subscription to channels: (*redis.Client).Subscribe,
// or (*redis.ClusterClient).SSubscribe for Redis Cluster's sharded pub/sub.
type Subscribe func(ctx context.Context, channels ...string) *redis.PubSub

// Source is where notices come from.
type Source struct {
	// Subscribe opens the subscription to the notice channels. Required.
	Subscribe Subscribe
	// Moves, when set, opens a subscription whose every message says the
	// notices' subscription may sit on a node that is no longer the master
	// (Sentinel's +switch-master; go-redis moves commands, not
	// subscriptions, to the new master): Watch then subscribes again, which
	// dials the new master. Optional.
	Moves func(ctx context.Context) *redis.PubSub
}

// Watch subscribes to every channel in handlers and calls the channel's
// handler for each message, and every handler after a re-subscription,
// until ctx is done. Handlers run on Watch's goroutine and must not block
// (coalesce in them). log may be nil.
//
// go-redis re-subscribes by itself after a broken connection. A server
// that ends the subscription itself (Redis Cluster sends sunsubscribe when
// a failover takes the channel's slot from the node), or a move announced
// by src.Moves, gets a new subscription, made afresh so it goes to the
// node that now serves the channel.
func Watch(ctx context.Context, src Source, handlers map[string]func(), log *slog.Logger) {
	if len(handlers) == 0 {
		return
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	channels := slices.Sorted(maps.Keys(handlers))
	for n, again := 0, false; ; again = true {
		start := time.Now()
		var moves *redis.PubSub
		if src.Moves != nil {
			moves = src.Moves(ctx)
		}
		why := watchOnce(ctx, src.Subscribe(ctx, channels...), moves, handlers, again, log)
		if why == "" {
			return
		}
		if n++; time.Since(start) > resubscribe.Max {
			n = 1 // it had lasted: this is a new episode, not a loop
		}
		wait := resubscribe.Delay(n)
		log.Info("notices: subscribing again", "reason", why, "retryInMs", wait.Milliseconds())
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}

// watchOnce reads one subscription until ctx is done ("") or it must be
// made again (why). again says the subscription replaces an earlier one,
// so its confirmation calls the handlers, as a re-subscription does.
// moves (may be nil) is closed on return, as ps is.
func watchOnce(ctx context.Context, ps, moves *redis.PubSub, handlers map[string]func(), again bool, log *slog.Logger) string {
	defer func() { _ = ps.Close() }()
	var moved <-chan *redis.Message
	if moves != nil {
		defer func() { _ = moves.Close() }()
		moved = moves.Channel(redis.WithChannelHealthCheckInterval(healthCheck))
	}
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(healthCheck))
	w := watcher{handlers: handlers, again: again, log: log, subscribed: map[string]bool{}}
	for {
		select {
		case <-ctx.Done():
			return ""
		case m, ok := <-moved:
			if ok {
				return "the master moved: " + m.Payload
			}
			moved = nil // closed; keep the notices
		case m, ok := <-msgs:
			if !ok {
				return ""
			}
			if why := w.take(m); why != "" {
				return why
			}
		}
	}
}

// watcher is what one subscription has seen: the channels it confirmed.
type watcher struct {
	handlers   map[string]func()
	again      bool
	log        *slog.Logger
	subscribed map[string]bool
}

// take calls a message's handler, or takes a subscription's change: why
// the subscription must be made again, or "".
func (w *watcher) take(m any) string {
	switch m := m.(type) {
	case *redis.Message:
		if h := w.handlers[m.Channel]; h != nil {
			h()
		}
	case *redis.Subscription:
		return w.subscription(m)
	}
	return ""
}

// subscription takes a (s)subscribe confirmation, which after a gap calls
// the channel's handler (messages during the gap are lost), or an
// unsubscribe, which only the server sends here.
func (w *watcher) subscription(m *redis.Subscription) string {
	switch m.Kind {
	case "unsubscribe", "sunsubscribe":
		return "the server ended the subscription" // Watch never unsubscribes
	case "subscribe", "ssubscribe":
	default:
		return ""
	}
	if w.subscribed[m.Channel] || w.again {
		w.log.Info("notices: re-subscribed, messages during the gap are lost", "channel", m.Channel)
		if h := w.handlers[m.Channel]; h != nil {
			h()
		}
	}
	w.subscribed[m.Channel] = true
	return ""
}
