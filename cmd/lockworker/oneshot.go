package main

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
)

// oneShotTimeout bounds a command-line call (status, enqueue, ...) to Redis.
const oneShotTimeout = 5 * time.Second

// oneShot loads the configuration and opens the backend for a
// command-line call, with a context bounded by oneShotTimeout; done
// releases both. Redis must answer first (backend.Reach), so a Redis
// that is down is named as such ("cannot reach Redis at ... (REDIS_URLS):
// connection refused") rather than by whichever command met it first;
// then PARTITIONS must be the fleet's. cmd names the command in the
// errors it did not expect.
// go-redis's own log lines are dropped: the command reports its error
// itself.
func oneShot(ctx context.Context, cmd string, getenv func(string) string) (*backend.Backend, context.Context, func(), error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
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
	if err := b.Reach(ctx, cfg.RedisNodeTimeout); err != nil {
		done()
		return nil, nil, nil, err
	}
	if err := b.CheckPartitions(ctx, cfg.RedisNodeTimeout, nil); err != nil {
		done()
		if !errors.Is(err, config.ErrInvalid) {
			err = failed(cmd, "read the partition count", err)
		}
		return nil, nil, nil, err
	}
	return b, ctx, done, nil
}
