package replicas

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// TTL is how long a master's count of online replicas is trusted before
// INFO replication is read again.
const TTL = time.Second

// Counts caches how many replicas each master has online, by the
// master's address: the one cache of every write that waits for its
// replicas (an epoch bump, an enqueue). Safe for concurrent use; one may
// be shared by every lock and queue of a replica.
type Counts struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]count
}

type count struct {
	n    int
	read time.Time
}

// NewCounts returns an empty cache; now reads the clock (nil: time.Now).
func NewCounts(now func() time.Time) *Counts {
	if now == nil {
		now = time.Now
	}
	return &Counts{now: now, m: map[string]count{}}
}

// Get is master's cached count and whether it is younger than TTL.
func (c *Counts) Get(master string) (n int, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[master]
	return r.n, ok && c.now().Sub(r.read) < TTL
}

// Set caches master's count, read now.
func (c *Counts) Set(master string, n int) {
	c.mu.Lock()
	c.m[master] = count{n: n, read: c.now()}
	c.mu.Unlock()
}

// Forget drops master's count: the next write reads it again (a WAIT
// fell short, or the master moved). "" forgets every master.
func (c *Counts) Forget(master string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if master == "" {
		clear(c.m)
		return
	}
	delete(c.m, master)
}

// Take reads an INFO replication reply of master (sent in some round
// trip), caches its count and returns it; it fails when the reply failed
// or the node is not a master.
func (c *Counts) Take(master string, info *redis.Cmd) (int, error) {
	n, err := Count(info)
	if err != nil {
		return 0, err
	}
	c.Set(master, n)
	return n, nil
}

// Count reads an INFO replication reply: how many replicas are online, or
// why that is not known (the command failed, the node is not a master).
func Count(info *redis.Cmd) (int, error) {
	text, err := info.Text()
	if err != nil {
		return 0, fmt.Errorf("INFO replication: %w", err)
	}
	return Online(text)
}

// Fresh is master's count: the cached one while it is fresh, else read
// now (INFO replication on m, one round trip).
func (c *Counts) Fresh(ctx context.Context, m *redis.Client) (int, error) {
	addr := m.Options().Addr
	if n, fresh := c.Get(addr); fresh {
		return n, nil
	}
	return c.Take(addr, m.Do(ctx, "INFO", "replication"))
}

// Master is the client of c's master for key, on which a write and its
// WAIT go together (WAIT counts the acknowledgements of the writes made
// on its own connection): c itself for a *redis.Client (one node, or
// Sentinel's failover client), the slot's master for a
// *redis.ClusterClient; nil for other clients, whose writes are not
// waited for.
func Master(ctx context.Context, c any, key string) (*redis.Client, error) {
	switch c := c.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	}
	return nil, nil
}
