package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/replicas"
)

// ErrNotReplicated is part of an enqueue's error when the job (or the
// whole batch) was written on the master but fewer replicas than required
// acknowledged it in time (WAIT): a failover now could lose it. It is in
// the queue and runs unless such a failover comes; an enqueue retried
// after this error may add it twice (jobs are at-least-once anyway).
var ErrNotReplicated = errors.New("jobs: written on the master but not acknowledged by enough replicas in time (a failover could lose it)")

// replicaCountTTL is how long a master's count of online replicas is
// trusted before INFO replication is read again.
const replicaCountTTL = time.Second

// acks is the WAIT step of the enqueues: a write is acknowledged to the
// caller only once every online replica of its master (INFO replication,
// state=online: one in a full resync cannot acknowledge), and at least
// min, has it. With no replica and min 0 nothing waits.
type acks struct {
	min     int
	timeout time.Duration

	mu     sync.Mutex
	counts map[string]replicaCount // by master address
}

type replicaCount struct {
	n    int
	read time.Time
}

// conn is a connection to the master that holds key and how many
// acknowledgements a write on it needs: a nil conn when none (no
// replica, min 0) or the client cannot say (then nothing waits). WAIT
// counts the acknowledgements of the writes made on its own connection,
// so the write and the WAIT go on conn, which the caller closes.
func (a *acks) conn(ctx context.Context, c redis.Cmdable, key string) (*redis.Conn, int, error) {
	if a == nil {
		return nil, 0, nil
	}
	var m *redis.Client
	switch c := c.(type) {
	case *redis.Client:
		m = c
	case *redis.ClusterClient:
		var err error
		if m, err = c.MasterForKey(ctx, key); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, nil
	}
	addr := m.Options().Addr
	a.mu.Lock()
	rc := a.counts[addr]
	a.mu.Unlock()
	if time.Since(rc.read) >= replicaCountTTL {
		info, err := m.Info(ctx, "replication").Result()
		if err != nil {
			return nil, 0, err
		}
		n, err := replicas.Online(info)
		if err != nil {
			return nil, 0, err
		}
		rc = replicaCount{n: n, read: time.Now()}
		a.mu.Lock()
		a.counts[addr] = rc
		a.mu.Unlock()
	}
	want := max(rc.n, a.min)
	if want == 0 {
		return nil, 0, nil
	}
	return m.Conn(), want, nil
}

// check is the WAIT's verdict: nil when want replicas acknowledged.
func (a *acks) check(wait *redis.Cmd, want int) error {
	acked, err := wait.Int64()
	if err == nil && int(acked) >= want {
		return nil
	}
	a.mu.Lock()
	clear(a.counts) // read the count again: a replica may be gone
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
	}
	return fmt.Errorf("%w: %d of %d replicas acknowledged within %s", ErrNotReplicated, acked, want, a.timeout)
}

// wait sends WAIT want on p, bounded by the timeout.
func (a *acks) wait(ctx context.Context, p redis.Pipeliner, want int) *redis.Cmd {
	return p.Do(ctx, "WAIT", want, a.timeout.Milliseconds())
}
