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
	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/roster"
)

// minRegistryInterval bounds how often a replica refreshes its registry
// record, whatever RENEW_INTERVAL is.
const minRegistryInterval = 250 * time.Millisecond

// RegistryInterval is how often a replica refreshes its registry record:
// RENEW_INTERVAL, at least 250ms. A record lives RecordTTL.
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
	// Partitions is PARTITIONS: how many locks and queues the fleet has.
	Partitions int
	// Lockers are the partitions' locks on every node, by partition: one
	// without partitions, the lock.
	Lockers []*redislock.Locker
	// Queues routes jobs into the partitions' job queues (on the first
	// node); Queues.Queues() are the queues by partition.
	Queues *jobs.Router
	// Renewals renews the leases of the partitions together, in one round
	// trip (the daemon's one renewal path, one partition or many).
	Renewals *redislock.Group
	// Roster (the fleet registry), History (the leaderships) and Operator
	// (step down, pause, resume, requeue) live on the first node too.
	Roster   *roster.Roster
	History  *history.History
	Operator *operator.Operator

	mode     config.Mode
	sharded  bool                  // Redis Cluster: the fleet's notices use sharded pub/sub
	laneSh   bool                  // the partitions' notices use sharded pub/sub (one partition on a Cluster)
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
	cluster := cfg.RedisMode == config.ModeCluster
	b := &Backend{Clients: clients, Keys: keys, Partitions: max(cfg.Partitions, 1), mode: cfg.Topology(),
		sharded: cluster, laneSh: cluster && cfg.Partitions <= 1}
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
	err = b.openLanes(cfg, names)
	if err == nil {
		err = b.openFleet(cfg)
	}
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("%w: %w", config.ErrInvalid, err)
	}
	return b, nil
}

// openLanes builds each partition's lock and queue, the router over the
// queues and the group that renews their leases together. Without partitions, partition 0's keys are the lock's own.
// On a Cluster with partitions, each partition's notices go out with
// classic PUBLISH: one subscription then hears them all, where sharded
// pub/sub would take one connection per partition's slot.
func (b *Backend) openLanes(cfg config.Config, names []string) error {
	nodes := make([]redis.Scripter, len(b.Clients))
	for i, c := range b.Clients {
		nodes[i] = c
	}
	queues := make([]*jobs.Queue, b.Partitions)
	counts := replicas.NewCounts(nil) // one count per master for every bump and enqueue
	for p := range b.Partitions {
		keys := b.Keys.Partition(p, b.Partitions)
		l, err := redislock.New(redislock.Config{
			Nodes:          nodes,
			Epoch:          b.Clients[0],
			NodeNames:      names,
			Keys:           keys,
			TTL:            cfg.LockTTL,
			DriftFactor:    cfg.ClockDriftFactor,
			NodeTimeout:    cfg.RedisNodeTimeout,
			MinReplicas:    cfg.RedisMinReplicas,
			ReplicaCounts:  counts,
			ShardedNotices: b.laneSh,
		})
		if err != nil {
			return err
		}
		if queues[p], err = jobs.New(jobs.Config{
			Client:         b.Clients[0],
			Keys:           keys,
			FenceKey:       l.FenceKey(),
			Partition:      p,
			Partitions:     b.Partitions,
			ShardedNotices: b.laneSh,
			MinReplicas:    cfg.RedisMinReplicas,
			ReplicaTimeout: max(cfg.RedisNodeTimeout/2, time.Millisecond), // the rest for the round trip
			ReplicaCounts:  counts,
			IdempotencyTTL: cfg.JobIdempotencyTTL,
		}); err != nil {
			return err
		}
		b.Lockers = append(b.Lockers, l)
	}
	var err error
	if b.Queues, err = jobs.NewRouter(queues, b.Clients[0], cfg.RedisMode != config.ModeCluster); err != nil {
		return err
	}
	b.Renewals, err = redislock.NewGroup(b.Lockers, cfg.RedisMode != config.ModeCluster)
	return err
}

// openFleet builds the registry, the history and the operator's side.
func (b *Backend) openFleet(cfg config.Config) error {
	first, keys := b.Clients[0], b.Keys
	var err error
	if b.Roster, err = roster.New(roster.Config{Client: first, Keys: keys, TTL: RecordTTL(cfg), ShardedNotices: b.sharded}); err != nil {
		return err
	}
	if b.History, err = history.New(history.Config{Client: first, Keys: keys, Partitions: b.Partitions}); err != nil {
		return err
	}
	holder := func(ctx context.Context, p int) (redislock.Holder, error) {
		if p < 0 || p >= len(b.Lockers) {
			return redislock.Holder{}, fmt.Errorf("no partition %d", p)
		}
		return b.Lockers[p].Holder(ctx)
	}
	b.Operator, err = operator.New(operator.Config{Client: first, Holder: holder, Queues: b.Queues.Queues(), Keys: keys,
		ShardedNotices: b.sharded})
	return err
}

// RecordTTL is how long a replica's registry record lives without a
// refresh: three refreshes. With partitions, no longer than LOCK_TTL less
// one refresh (and no shorter than two refreshes), so the record of a
// replica that died is gone, and its partitions contended for, before
// its leases run out.
func RecordTTL(cfg config.Config) time.Duration {
	every := RegistryInterval(cfg)
	if cfg.Partitions <= 1 {
		return 3 * every
	}
	return min(3*every, max(2*every, cfg.LockTTL-every))
}

// Mode names the topology (config.Config.Topology).
func (b *Backend) Mode() config.Mode { return b.mode }

// Topology describes the topology for people, e.g. "redlock (3 nodes,
// quorum 2)".
func (b *Backend) Topology() string {
	if b.mode == config.ModeRedlock {
		return fmt.Sprintf("redlock (%d nodes, quorum %d)", len(b.Clients), b.Lockers[0].Quorum())
	}
	return string(b.mode)
}

// Sources are where notices come from, one per lock node: classic
// pub/sub, through the current master in sentinel mode (and subscribed
// again, through the new master, when the sentinels announce a switch);
// in cluster mode sharded pub/sub (SSUBSCRIBE), which keeps a channel on
// the nodes of its slot, the lock's, instead of broadcasting every message
// to every node, and follows the slot when a failover moves it.
//
// The fleet's channels (the registry's, the operator's) and, without
// partitions, the lock's and the queue's are on these. With partitions on
// a Cluster, the partitions' channels are on LaneSources.
func (b *Backend) Sources() []notice.Source { return b.sources(b.sharded) }

// LaneSources are where the partitions' release and enqueue notices come
// from: Sources, but for classic pub/sub on a Cluster with partitions.
func (b *Backend) LaneSources() []notice.Source { return b.sources(b.laneSh) }

// LaneNoticesApart reports that the partitions' notices need a
// subscription apart from the fleet's (LaneSources differ from Sources).
func (b *Backend) LaneNoticesApart() bool { return b.laneSh != b.sharded }

func (b *Backend) sources(sharded bool) []notice.Source {
	out := make([]notice.Source, len(b.Clients))
	for i, c := range b.Clients {
		out[i].Subscribe = c.Subscribe
		if sharded {
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
