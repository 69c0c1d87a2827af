package main

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/redisopt"
)

// newClient is the one go-redis configuration every library gets, so only
// the lock differs between rows. It is the daemon's (cmd/lockworker
// redis.go): no retries, context deadlines bound socket reads, and the node
// timeout for dial, read and write.
func newClient(addr string, o options) *redis.Client {
	return redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(),
		Addr:                  addr,
		PoolSize:              poolSize(o),
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           o.nodeTimeout,
		ReadTimeout:           o.nodeTimeout,
		WriteTimeout:          o.nodeTimeout,
	})
}

// poolSize leaves room for every worker goroutine of a cell to hold a
// connection, so no row waits on the pool.
func poolSize(o options) int { return 2 * o.workers }

// newClients returns one client per address.
func newClients(addrs []string, o options) []*redis.Client {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = newClient(a, o)
	}
	return cs
}

// describeClients says what newClient sets, for the report.
func describeClients(o options) string {
	return fmt.Sprintf("PoolSize %d, MaxRetries -1, ContextTimeoutEnabled true, Dial/Read/WriteTimeout %s, RESP3 (go-redis default)",
		poolSize(o), o.nodeTimeout)
}
