package redislock

import (
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Locker takes, renews and releases one lock key on one node or, with
// Redlock, on a quorum of N independent masters. It is safe for concurrent
// use; each Acquire makes a new attempt with a new random value.
type Locker struct {
	nodes       []redis.Scripter
	names       []string
	epoch       redis.Scripter
	inlineEpoch bool // single node that is its own epoch authority: bump inside the acquire script
	key         string
	ttl         time.Duration
	ttlMs       int64
	validity    time.Duration // TTL - drift
	nodeTimeout time.Duration
	now         func() time.Time
	quorum      int
	sharded     string // "1": release notices go out with SPUBLISH

	master      *master      // the epoch authority's master, for the WAIT step; nil: no WAIT
	replicas    replicaCount // its online replicas, cached
	minReplicas int          // acknowledgements needed even with fewer online
	waitTimeout time.Duration

	lockKeys  []string // K, K:holder
	acqKeys   []string // K, K:holder, K:epoch, K:epoch:last
	epochKeys []string // K:epoch, K:epoch:last, K, K:holder
}

// New validates cfg and returns a Locker. Every invariant is checked and all
// violations are reported together.
func New(cfg Config) (*Locker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	ttl := cfg.TTL.Truncate(time.Millisecond)
	drift := time.Duration(float64(ttl)*cfg.DriftFactor) + 2*time.Millisecond
	epoch := cfg.Epoch
	if isNil(epoch) {
		epoch = cfg.Nodes[0]
	}
	k := cfg.Key
	sharded := "0"
	if cfg.ShardedNotices {
		sharded = "1"
	}
	return &Locker{
		nodes:       slices.Clone(cfg.Nodes),
		names:       slices.Clone(cfg.NodeNames),
		epoch:       epoch,
		inlineEpoch: len(cfg.Nodes) == 1 && same(epoch, cfg.Nodes[0]),
		key:         k,
		ttl:         ttl,
		ttlMs:       ttl.Milliseconds(),
		validity:    ttl - drift,
		nodeTimeout: cfg.NodeTimeout,
		now:         cfg.Now,
		quorum:      len(cfg.Nodes)/2 + 1,
		sharded:     sharded,
		master:      masterOf(epoch, k),
		minReplicas: cfg.MinReplicas,
		waitTimeout: max(cfg.NodeTimeout/2, time.Millisecond).Truncate(time.Millisecond), // the rest for the round trip
		lockKeys:    []string{k, HolderKey(k)},
		acqKeys:     []string{k, HolderKey(k), EpochKey(k), epochTagKey(k)},
		epochKeys:   []string{EpochKey(k), epochTagKey(k), k, HolderKey(k)},
	}, nil
}

// Quorum is how many nodes must agree: N/2+1, so 1 for a single node.
func (l *Locker) Quorum() int { return l.quorum }

func (l *Locker) nodeErr(i int, err error) error { return &NodeError{Node: l.names[i], Err: err} }
