package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
)

// oneShotTimeout bounds a command-line call (status, enqueue, ...) to Redis.
const oneShotTimeout = 5 * time.Second

// oneShot opens the backend for a command-line call, with a context
// bounded by oneShotTimeout; done releases both. The first node is asked
// for a PING first, so a Redis that cannot be reached is named at once.
// go-redis's own log lines are dropped: the command reports its error
// itself.
func oneShot(ctx context.Context, cfg config.Config) (*backend.Backend, context.Context, func(), error) {
	redis.SetLogger(backend.RedisLogger(nil))
	// A command holds no lease: it can wait for a slow Redis longer than a
	// replica may, up to the bound configuration allows (LOCK_TTL/3).
	cfg.RedisNodeTimeout = max(cfg.RedisNodeTimeout, min(time.Second, cfg.LockTTL/3-time.Millisecond))
	b, err := backend.Open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, oneShotTimeout)
	done := func() { cancel(); _ = b.Close() }
	if err := b.Ping(ctx); err != nil {
		done()
		return nil, nil, nil, err
	}
	return b, ctx, done, nil
}
