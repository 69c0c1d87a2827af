package redislock

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// WatchReleases subscribes to ReleasedChannel(key) on every client and calls
// notify for each release notice, until ctx is done; it returns when all its
// subscriptions are closed. notify must not block (coalesce in it).
//
// go-redis re-subscribes by itself after a broken connection and drops what
// was published during the gap, so a re-subscription is also reported with
// notify: the listener should re-read the lock state rather than trust that
// it missed nothing. Notices are hints for a fast handover, never proof that
// the lock is free: a waiter still has to Acquire. log may be nil.
func WatchReleases(ctx context.Context, clients []*redis.Client, key string, notify func(), log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { watchOne(ctx, c, ReleasedChannel(key), notify, log) })
	}
	wg.Wait()
}

func watchOne(ctx context.Context, c *redis.Client, channel string, notify func(), log *slog.Logger) {
	ps := c.Subscribe(ctx, channel)
	defer func() { _ = ps.Close() }()
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(5 * time.Second))
	subscribed := false
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
				notify()
			case *redis.Subscription:
				if m.Kind != "subscribe" {
					continue
				}
				if subscribed {
					log.Info("release notices: re-subscribed, messages during the gap are lost", "channel", m.Channel)
					notify()
				}
				subscribed = true
			}
		}
	}
}
