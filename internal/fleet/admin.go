package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/redisopt"
)

// fastSync makes a master start a replica's full sync at once, instead of
// waiting 5s for more replicas to share one diskless transfer.
var fastSync = []string{"--repl-diskless-sync-delay", "0"}

// onlineReplicas asks the node at addr for its role: an error when it is
// not a master, else how many replicas are online (ROLE lists only those).
func onlineReplicas(ctx context.Context, addr string) (int, error) {
	v, err := adminDo(ctx, addr, "ROLE").Slice()
	if err != nil {
		return 0, err
	}
	if len(v) < 3 || v[0] != "master" {
		return 0, fmt.Errorf("%s is not a master: %v", addr, v)
	}
	list, _ := v[2].([]any)
	return len(list), nil
}

// adminDo sends one command to addr on a connection of its own.
func adminDo(ctx context.Context, addr string, args ...any) *redis.Cmd {
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: addr, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true, PoolSize: 1})
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Do(ctx, args...)
}

// retry calls fn every 50ms until it succeeds or ctx ends, and then
// returns fn's last error with ctx's.
func retry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
