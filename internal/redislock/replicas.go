package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/scriptpipe"
)

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
// The replica count comes from the counts cache (package replicas),
// read again with INFO replication once older than replicas.TTL. When
// the stale count is 0, INFO replication rides in the same round trip as
// the script, and only when it finds replicas does a second WAIT follow.
// When the stale count names replicas, INFO replication goes first, in a
// round trip of its own: one of them may be gone, and WAIT for more
// replicas than are connected blocks for its whole timeout, eating the
// node timeout the rest of the attempt needs. (INFO replication in that
// same round trip did not help: when the WAIT's reply missed the
// deadline, go-redis marked every command of the pipeline failed, INFO
// replication's good answer included, so the count was never corrected
// and, under load, every attempt waited for the missing replica again.)
func (l *Locker) replicated(ctx context.Context, s *redis.Script, keys []string, args []any, wrote func([]int64) bool) ([]int64, error) {
	if l.master == nil {
		return s.Run(ctx, l.epoch, keys, args...).Int64Slice()
	}
	m, err := l.master.get(ctx)
	if err != nil {
		return nil, err
	}
	b := &bump{l: l, m: m, addr: m.Options().Addr}
	online, fresh := l.counts.Get(b.addr)
	if fresh && replicas.Want(online, l.minReplicas) == 0 {
		return s.Run(ctx, l.epoch, keys, args...).Int64Slice()
	}
	conn := m.Conn() // one connection: WAIT counts the acknowledgements of its own writes
	defer func() { _ = conn.Close() }()
	if err := b.count(ctx, conn, online, fresh); err != nil {
		return nil, err
	}
	return b.run(ctx, conn, s, keys, args, wrote)
}

// bump is one replicated run of a script on the authority's master m
// (its address addr keys the counts cache): how many replicas it knows
// online, how many acknowledgements it waits for, and whether it reads
// the count in its round trip.
type bump struct {
	l        *Locker
	m        *redis.Client
	addr     string
	online   int
	want     int
	readRole bool
}

// count settles what the round trip waits for: the cached count while it
// is fresh; a stale count of 0 is read again within the round trip; a
// stale count that names replicas is read again first, on its own.
func (b *bump) count(ctx context.Context, conn *redis.Conn, online int, fresh bool) error {
	b.online, b.want, b.readRole = online, replicas.Want(online, b.l.minReplicas), !fresh
	if fresh || online == 0 {
		return nil
	}
	n, err := b.take(conn.Do(ctx, "INFO", "replication"))
	if err != nil {
		b.l.master.redirected(ctx) // not a master any more: a failover moved it
		return err
	}
	b.online, b.want, b.readRole = n, replicas.Want(n, b.l.minReplicas), false
	return nil
}

// run sends the round trip (bumpAndWait) and turns its replies into
// replicated's result.
func (b *bump) run(ctx context.Context, conn *redis.Conn, s *redis.Script, keys []string, args []any, wrote func([]int64) bool) ([]int64, error) {
	l := b.l
	role, run, wait := l.bumpAndWait(ctx, conn, s, keys, args, b.want, b.readRole)
	v, err := run.Int64Slice()
	switch {
	case redis.HasErrorPrefix(err, "NOSCRIPT"): // not run: the replicas that count did not answer
		return nil, b.unanswered(role, wait)
	case err != nil:
		if redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "READONLY") {
			l.master.redirected(ctx)
			l.counts.Forget(b.addr)
		}
		return nil, err
	}
	have, rerr := b.want, error(nil)
	if role != nil {
		if have, rerr = b.take(role); rerr == nil {
			have = replicas.Want(have, l.minReplicas)
		}
	}
	switch {
	case !wrote(v):
		return v, nil
	case rerr != nil:
		return v, rerr
	case have > b.want: // more replicas than waited for: wait for them all
		wait = replicas.Wait(ctx, conn, have, l.waitTimeout)
	case have == 0: // none left: nothing to wait for
		return v, nil
	}
	return v, b.acked(wait, have)
}

// take reads an INFO replication reply into the cache.
func (b *bump) take(info *redis.Cmd) (int, error) {
	n, err := b.l.counts.Take(b.addr, info)
	if err != nil {
		return 0, fmt.Errorf("the epoch authority: %w", err)
	}
	b.online = n
	return n, nil
}

// acked is the WAIT's verdict: nil when want replicas acknowledged.
func (b *bump) acked(wait *redis.Cmd, want int) error {
	err := b.l.counts.Acked(b.addr, wait, want, b.l.waitTimeout)
	if err == nil {
		return nil
	}
	return b.short(fmt.Errorf("%w: %w (at least %d required)", ErrReplicas, err, b.l.minReplicas))
}

// unanswered is the error of a round trip whose script did not run again
// after NOSCRIPT because the replicas that count did not answer its WAIT.
func (b *bump) unanswered(role, wait *redis.Cmd) error {
	b.l.counts.Forget(b.addr)
	why := []error{fmt.Errorf("%w: fewer than %d acknowledged within %s", ErrReplicas, b.want, b.l.waitTimeout)}
	if wait != nil {
		why = append(why, wait.Err())
	}
	if role != nil {
		if _, err := b.take(role); err != nil {
			why = append(why, err)
		}
	}
	return b.short(errors.Join(why...))
}

// short is err with what is known of the master.
func (b *bump) short(err error) error {
	return &ReplicasError{Master: b.l.master.name(b.m), Online: b.online, Min: b.l.minReplicas, Err: err}
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
			if n, err := replicas.Count(first.Before[0]); err == nil {
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
		b.After = [][]any{replicas.WaitCommand(want, l.waitTimeout)}
	}
	return b
}
