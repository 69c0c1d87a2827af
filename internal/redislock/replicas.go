package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/scriptpipe"
)

// replicaCountTTL is how long the epoch authority's count of online
// replicas is trusted. After that it is read again (INFO replication), in the same
// round trip as the next bump.
const replicaCountTTL = time.Second

// ErrReplicas marks an epoch bump that did not reach every online replica
// of the authority's master in time: its token must not be used, since a
// failover could hand it out again.
var ErrReplicas = errors.New("redislock: the fencing epoch did not reach every replica")

// ReplicasError is an ErrReplicas with what was known of the master: its
// address, how many replicas it had online at the last read (INFO
// replication) and Config.MinReplicas. Short says no bump on it can be
// acknowledged until replicas come online or MinReplicas is lowered.
type ReplicasError struct {
	Master string // host:port; the configured node name outside a Cluster
	Online int
	Min    int
	Err    error // wraps ErrReplicas
}

func (e *ReplicasError) Error() string { return e.Err.Error() }
func (e *ReplicasError) Unwrap() error { return e.Err }

// Short: the master has fewer online replicas than MinReplicas asks, so
// every WAIT times out, however often it is retried.
func (e *ReplicasError) Short() bool { return e.Online < e.Min }

// master is the epoch authority's current master as one *redis.Client, so
// a pipeline on it uses one connection: WAIT counts the acknowledgements
// of the writes made on its own connection.
type master struct {
	get func(ctx context.Context) (*redis.Client, error)
	// name names m in errors.
	name func(m *redis.Client) string
	// redirected refreshes the client's view of the topology after a
	// MOVED, ASK or READONLY reply (a failover moved the master).
	redirected func(ctx context.Context)
}

// masterOf is how to reach c's master for key: c itself for a
// *redis.Client (one node, or Sentinel's failover client, named name:
// its own address says nothing there), the slot's master for a
// *redis.ClusterClient. Nil for other clients: their bumps are not
// WAITed.
func masterOf(c redis.Scripter, key, name string) *master {
	switch c := c.(type) {
	case *redis.Client:
		return &master{
			get:        func(context.Context) (*redis.Client, error) { return c, nil },
			name:       func(*redis.Client) string { return name },
			redirected: func(context.Context) {},
		}
	case *redis.ClusterClient:
		return &master{
			get:        func(ctx context.Context) (*redis.Client, error) { return c.MasterForKey(ctx, key) },
			name:       func(m *redis.Client) string { return m.Options().Addr },
			redirected: c.ReloadState,
		}
	}
	return nil
}

// replicaCount caches how many online replicas the authority's master has.
type replicaCount struct {
	mu   sync.Mutex
	n    int
	read time.Time // zero: never read, or invalidated
}

// get returns the cached count and whether it is younger than
// replicaCountTTL.
func (r *replicaCount) get(now time.Time) (n int, fresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, !r.read.IsZero() && now.Sub(r.read) < replicaCountTTL
}

func (r *replicaCount) set(n int, now time.Time) {
	r.mu.Lock()
	r.n, r.read = n, now
	r.mu.Unlock()
}

func (r *replicaCount) invalidate() {
	r.mu.Lock()
	r.read = time.Time{}
	r.mu.Unlock()
}

// replicated is the WAIT step: it runs script s on the epoch authority
// and, when s wrote (wrote says so from the reply) and the authority's
// master has online replicas, returns only once every one of them
// acknowledged the write (WAIT on the same connection, in the same round
// trip, bounded by the node timeout); otherwise it returns the reply with
// an error wrapping ErrReplicas, and the caller must not use its token.
//
// It waits for at least MinReplicas acknowledgements even when fewer
// replicas are online. With no replica and MinReplicas 0 it costs what it
// did before: one EVALSHA, in one round trip.
//
// The replica count comes from INFO replication, read again once the cached count is
// older than replicaCountTTL. When the stale count is 0, INFO replication rides in the
// same round trip as the script, and only when it finds replicas does a
// second WAIT follow. When the stale count names replicas, INFO replication goes first,
// in a round trip of its own: one of them may be gone, and WAIT for more
// replicas than are connected blocks for its whole timeout, eating the
// node timeout the rest of the attempt needs. (INFO replication in that same round trip
// did not help: when the WAIT's reply missed the deadline, go-redis marked
// every command of the pipeline failed, INFO replication's good answer included, so
// the count was never corrected and, under load, every attempt waited for
// the missing replica again.)
func (l *Locker) replicated(ctx context.Context, s *redis.Script, keys []string, args []any, wrote func([]int64) bool) ([]int64, error) {
	online, fresh := l.replicas.get(l.now())
	want := max(online, l.minReplicas)
	if l.master == nil || (fresh && want == 0) {
		return s.Run(ctx, l.epoch, keys, args...).Int64Slice()
	}
	m, err := l.master.get(ctx)
	if err != nil {
		return nil, err
	}
	conn := m.Conn() // one connection: WAIT counts the acknowledgements of its own writes
	defer func() { _ = conn.Close() }()
	readRole := !fresh
	if readRole && online > 0 {
		n, err := onlineReplicas(conn.Do(ctx, "INFO", "replication"))
		if err != nil {
			l.master.redirected(ctx) // not a master any more: a failover moved it
			return nil, err
		}
		l.replicas.set(n, l.now())
		online, want, readRole = n, max(n, l.minReplicas), false
	}
	short := func(online int, err error) error {
		return &ReplicasError{Master: l.master.name(m), Online: online, Min: l.minReplicas, Err: err}
	}
	role, run, wait := l.bumpAndWait(ctx, conn, s, keys, args, want, readRole)
	v, err := run.Int64Slice()
	if redis.HasErrorPrefix(err, "NOSCRIPT") { // not run: the replicas that count did not answer
		l.replicas.invalidate()
		var why []error
		if wait != nil {
			why = append(why, wait.Err())
		}
		if role != nil {
			n, rerr := onlineReplicas(role)
			if rerr != nil {
				why = append(why, rerr)
			} else {
				online = n
			}
		}
		return nil, short(online, errors.Join(append([]error{fmt.Errorf("%w: fewer than %d acknowledged within %s", ErrReplicas, want, l.waitTimeout)}, why...)...))
	}
	if err != nil {
		if redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "READONLY") {
			l.master.redirected(ctx)
			l.replicas.invalidate()
		}
		return nil, err
	}
	have, rerr := want, error(nil)
	if role != nil {
		if have, rerr = onlineReplicas(role); rerr == nil {
			l.replicas.set(have, l.now())
			online, have = have, max(have, l.minReplicas)
		}
	}
	switch {
	case !wrote(v):
		return v, nil
	case rerr != nil:
		return v, rerr
	case have > want: // more replicas than waited for: wait for them all
		wait = conn.Do(ctx, "WAIT", have, l.waitTimeout.Milliseconds())
	case have == 0: // none left: nothing to wait for
		return v, nil
	}
	want = have
	if acked, err := wait.Int64(); err != nil || int(acked) < want {
		l.replicas.invalidate()
		return v, short(online, errors.Join(fmt.Errorf("%w: %d of %d acknowledged within %s (at least %d required)",
			ErrReplicas, acked, want, l.waitTimeout, l.minReplicas), err))
	}
	return v, nil
}

// bumpAndWait sends, in one round trip on conn: INFO replication when asked, the
// script, and WAIT want when want > 0 (scriptpipe.Run). After NOSCRIPT (a
// fresh server, or a promoted replica: scripts are not replicated) it
// sends the script again with its body, and the WAIT, unless the replicas
// did not answer the first WAIT: a second try would wait as long in vain.
// role and wait are nil when not sent.
func (l *Locker) bumpAndWait(ctx context.Context, conn *redis.Conn, s *redis.Script, keys []string, args []any, want int, readRole bool) (role, run, wait *redis.Cmd) {
	first, r := scriptpipe.Run(ctx, conn, l.waitBatch(s, keys, args, want, readRole), func(first scriptpipe.Reply) (scriptpipe.Batch, bool) {
		if want == 0 {
			return l.waitBatch(s, keys, args, 0, false), true
		}
		// A master that lost its scripts was often just promoted, and may
		// have lost replicas too: wait for those online now.
		need := want
		if readRole {
			if n, err := onlineReplicas(first.Before[0]); err == nil {
				need = max(n, l.minReplicas)
			}
		}
		if acked, err := first.After[0].Int64(); (err != nil || int(acked) < want) && need >= want {
			return scriptpipe.Batch{}, false
		}
		return l.waitBatch(s, keys, args, need, false), true
	})
	if readRole {
		role = first.Before[0] // INFO went with the first send only
	}
	if len(r.After) > 0 {
		wait = r.After[0]
	}
	return role, r.Script, wait
}

// waitBatch is bumpAndWait's round trip: INFO replication when readRole, the script,
// WAIT want when want > 0.
func (l *Locker) waitBatch(s *redis.Script, keys []string, args []any, want int, readRole bool) scriptpipe.Batch {
	b := scriptpipe.Batch{Script: s, Keys: keys, Args: args}
	if readRole {
		b.Before = [][]any{{"INFO", "replication"}}
	}
	if want > 0 {
		b.After = [][]any{{"WAIT", want, l.waitTimeout.Milliseconds()}}
	}
	return b
}

// onlineReplicas reads INFO replication's reply: how many replicas are
// online, so can acknowledge a write now (a replica in a full resync is
// connected but cannot, and waiting for it only times out), or an error
// when the node is not a master.
func onlineReplicas(c *redis.Cmd) (int, error) {
	info, err := c.Text()
	if err != nil {
		return 0, fmt.Errorf("INFO replication: %w", err)
	}
	n, err := replicas.Online(info)
	if err != nil {
		return 0, fmt.Errorf("the epoch authority: %w", err)
	}
	return n, nil
}
