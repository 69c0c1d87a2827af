package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/operator"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/roster"
)

// minRegistryInterval bounds how often a replica refreshes its registry
// record, whatever RENEW_INTERVAL is.
const minRegistryInterval = 250 * time.Millisecond

// RegistryInterval is how often a replica refreshes its registry record:
// RENEW_INTERVAL, at least 250ms. A record lives three of these.
func RegistryInterval(cfg config.Config) time.Duration {
	return max(cfg.RenewInterval, minRegistryInterval)
}

// Backend is the lock, the queue and the fleet's shared view on the
// configured Redis.
type Backend struct {
	// Clients holds one client per lock node: in standalone mode one per
	// REDIS_URLS entry (the first also holds the fencing epoch and the
	// queue); in sentinel mode the failover client; in cluster mode the
	// cluster client.
	Clients []redis.UniversalClient
	// Keys names every key and channel of LOCK_KEY (package keyspace).
	Keys keyspace.Base
	// Locker is the lock on every node.
	Locker *redislock.Locker
	// Queue is the job queue on the first node.
	Queue *jobs.Queue
	// Roster (the fleet registry), History (the leaderships) and Operator
	// (step down, pause, resume, requeue) live on the first node too.
	Roster   *roster.Roster
	History  *history.History
	Operator *operator.Operator

	mode     config.Mode
	sharded  bool                  // Redis Cluster: notices use sharded pub/sub
	sentinel *redis.SentinelClient // Sentinel mode: announces master switches
	probes   []probeTarget         // what Probe says of each client, by index
}

// probeTarget names a client's node for Probe's messages; tls marks a
// standalone rediss:// node, which Probe may ask in plain RESP whether it
// speaks TLS at all.
type probeTarget struct {
	addr string
	tls  bool
}

// Open builds the clients, the lock and the queue. It does not dial.
// Errors caused by the configuration wrap config.ErrInvalid.
func Open(cfg config.Config) (*Backend, error) {
	opts, err := parseURLs(cfg)
	if err != nil {
		return nil, err
	}
	keys, err := keyspace.New(cfg.LockKey)
	if err != nil {
		return nil, &config.Error{Var: "LOCK_KEY", Msg: err.Error()}
	}
	clients, names := dial(cfg, opts)
	b := &Backend{Clients: clients, Keys: keys, mode: cfg.Topology(), sharded: cfg.RedisMode == config.ModeCluster}
	if cfg.RedisMode == config.ModeSentinel {
		b.sentinel = sentinelClient(cfg, opts)
	}
	for i := range clients {
		t := probeTarget{addr: names[i]}
		if cfg.RedisMode == config.ModeStandalone {
			t.tls = opts[i].TLSConfig != nil
		}
		b.probes = append(b.probes, t)
	}
	nodes := make([]redis.Scripter, len(clients))
	for i, c := range clients {
		nodes[i] = c
	}
	b.Locker, err = redislock.New(redislock.Config{
		Nodes:          nodes,
		Epoch:          clients[0],
		NodeNames:      names,
		Keys:           keys.Lease(),
		TTL:            cfg.LockTTL,
		DriftFactor:    cfg.ClockDriftFactor,
		NodeTimeout:    cfg.RedisNodeTimeout,
		MinReplicas:    cfg.RedisMinReplicas,
		ShardedNotices: b.sharded,
	})
	if err == nil {
		b.Queue, err = jobs.New(jobs.Config{
			Client:         clients[0],
			Keys:           keys.Lease(),
			FenceKey:       b.Locker.FenceKey(),
			ShardedNotices: b.sharded,
		})
	}
	if err == nil {
		err = b.openFleet(cfg)
	}
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("%w: %w", config.ErrInvalid, err)
	}
	return b, nil
}

// openFleet builds the registry, the history and the operator's side.
func (b *Backend) openFleet(cfg config.Config) error {
	first, keys := b.Clients[0], b.Keys
	var err error
	if b.Roster, err = roster.New(roster.Config{Client: first, Keys: keys, TTL: 3 * RegistryInterval(cfg), ShardedNotices: b.sharded}); err != nil {
		return err
	}
	if b.History, err = history.New(history.Config{Client: first, Keys: keys}); err != nil {
		return err
	}
	b.Operator, err = operator.New(operator.Config{Client: first, Holder: b.Locker.Holder, Queue: b.Queue, Keys: keys, ShardedNotices: b.sharded})
	return err
}

// Mode names the topology (config.Config.Topology).
func (b *Backend) Mode() config.Mode { return b.mode }

// Topology describes the topology for people, e.g. "redlock (3 nodes,
// quorum 2)".
func (b *Backend) Topology() string {
	if b.mode == config.ModeRedlock {
		return fmt.Sprintf("redlock (%d nodes, quorum %d)", len(b.Clients), b.Locker.Quorum())
	}
	return string(b.mode)
}

// Sources are where notices come from, one per lock node: classic
// pub/sub, through the current master in sentinel mode (and subscribed
// again, through the new master, when the sentinels announce a switch);
// in cluster mode sharded pub/sub (SSUBSCRIBE), which keeps a channel on
// the nodes of its slot, the lock's, instead of broadcasting every message
// to every node, and follows the slot when a failover moves it.
func (b *Backend) Sources() []notice.Source {
	out := make([]notice.Source, len(b.Clients))
	for i, c := range b.Clients {
		out[i].Subscribe = c.Subscribe
		if b.sharded {
			out[i].Subscribe = c.SSubscribe
		}
		if b.sentinel != nil {
			out[i].Moves = func(ctx context.Context) *redis.PubSub { return b.sentinel.Subscribe(ctx, "+switch-master") }
		}
	}
	return out
}

// Close closes every client.
func (b *Backend) Close() error {
	var errs []error
	for _, c := range b.Clients {
		errs = append(errs, c.Close())
	}
	if b.sentinel != nil {
		errs = append(errs, b.sentinel.Close())
	}
	return errors.Join(errs...)
}
