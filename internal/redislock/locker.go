package redislock

import (
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/replicas"
)

// Locker takes, renews and releases one lock key on one node or, with
// Redlock, on a quorum of N independent masters. It is safe for concurrent
// use; each Acquire makes a new attempt with a new random value.
type Locker struct {
	nodes       []redis.Scripter
	names       []string
	epoch       redis.Scripter
	epochNode   int // index of the node that is also the epoch authority (it mints when it grants); -1: none
	keys        keyspace.Lease
	ttl         time.Duration
	validity    time.Duration // TTL - drift
	nodeTimeout time.Duration
	now         func() time.Time
	quorum      int
	sharded     bool // release notices go out with SPUBLISH

	master      *master          // the epoch authority's master, for the WAIT step; nil: no WAIT
	counts      *replicas.Counts // the masters' online replicas, cached
	minReplicas int              // acknowledgements needed even with fewer online
	waitTimeout time.Duration

	lockKeys  []string // K
	acqKeys   []string // K, K:epoch
	epochKeys []string // K:epoch, K:epoch:last, K, the fence
	fixKeys   []string // K:epoch, K:epoch:last, the fence (raise, reissue)
	fenceKey  string   // see FenceKey
	ttlArg    string   // TTL in ms, as sent
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
	k := cfg.Keys
	fence := k.Fence()
	if len(cfg.Nodes) == 1 {
		fence = k.Epoch() // see (*Locker).FenceKey
	}
	epochNode, epochName := -1, "the epoch authority"
	for i, n := range cfg.Nodes {
		if same(epoch, n) {
			epochNode, epochName = i, cfg.NodeNames[i]
			break
		}
	}
	return &Locker{
		nodes:       slices.Clone(cfg.Nodes),
		names:       slices.Clone(cfg.NodeNames),
		epoch:       epoch,
		epochNode:   epochNode,
		keys:        k,
		ttl:         ttl,
		validity:    ttl - drift,
		nodeTimeout: cfg.NodeTimeout,
		now:         cfg.Now,
		quorum:      len(cfg.Nodes)/2 + 1,
		sharded:     cfg.ShardedNotices,
		master:      masterOf(epoch, k.Lock(), epochName),
		counts:      cfg.ReplicaCounts,
		minReplicas: cfg.MinReplicas,
		waitTimeout: max(cfg.NodeTimeout/2, time.Millisecond).Truncate(time.Millisecond), // the rest for the round trip
		lockKeys:    []string{k.Lock()},
		acqKeys:     []string{k.Lock(), k.Epoch()},
		epochKeys:   []string{k.Epoch(), k.EpochLast(), k.Lock(), fence},
		fixKeys:     []string{k.Epoch(), k.EpochLast(), fence},
		fenceKey:    fence,
		ttlArg:      strconv.FormatInt(ttl.Milliseconds(), 10),
	}, nil
}

// FenceKey is the key the job store fences on (jobs.Config.FenceKey): a
// token below its value is rejected, and an accepted one raises it.
//
// With one lock node it is the epoch itself (keyspace.Lease.Epoch): the
// node's grant is the leadership, so every minted token is a leader's, the
// highest issued is the highest that matters, and the fence moves in the
// mint's own acknowledged (WAIT) script. With Redlock it is
// keyspace.Lease.Fence: the authority mints
// when it grants, before the quorum is known, and a token of an attempt
// that failed must fence no working leader, so the fence is the highest
// token a fenced write carried (Kleppmann's rule), raised also by a bump
// after a won quorum, a reissue and an epoch raise.
func (l *Locker) FenceKey() string { return l.fenceKey }

// Quorum is how many nodes must agree: N/2+1, so 1 for a single node.
func (l *Locker) Quorum() int { return l.quorum }

func (l *Locker) nodeErr(i int, err error) error { return &NodeError{Node: l.names[i], Err: err} }
