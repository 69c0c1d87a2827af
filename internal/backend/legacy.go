package backend

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/redislock"
)

var (
	//go:embed legacy.lua
	legacyLua    string
	legacyScript = redis.NewScript(legacyLua)

	//go:embed tombstone.lua
	tombstoneLua    string
	tombstoneScript = redis.NewScript(tombstoneLua)
)

// ErrLegacyLeader means an older lockworker (before hash tags) holds the
// lock under the old key names. Its keys cannot move while it leads: stop
// every older replica.
var ErrLegacyLeader = errors.New("backend: an older lockworker leads under the key names before hash tags; stop every older replica, and this one moves the keys and takes over")

// Migration says what Migrate did.
type Migration struct {
	// Moved is true when this call moved the keys (false: nothing to move,
	// or moved before).
	Moved bool
	// Epoch is the old fencing epoch the new one starts from.
	Epoch int64
	// DeadLetters counts the dead-letter records moved.
	DeadLetters int64
}

// legacy is the key names an older lockworker used for an untagged
// LOCK_KEY K: K, K:holder, K:epoch and K:jobs:..., in slots of their own.
type legacy struct {
	lockKeys  []string // K, K:holder
	keys      []string // legacy.lua's KEYS
	oldDead   string   // K:jobs:dead:
	newDead   string   // {K}:jobs:dead:
	mark      string
	nodes     []redis.UniversalClient // [0] holds the epoch and the queue
	quorum    int
	timeout   time.Duration
	completed atomic.Bool
}

// newLegacy is the migration for LOCK_KEY k, or nil when there can be no
// older keys: k carried a hash tag already (its names did not change), or
// the mode is Cluster (older versions could not run on one).
func newLegacy(k, mode string, nodes []redis.UniversalClient, quorum int, timeout time.Duration) *legacy {
	tagged := redislock.TaggedKey(k)
	if tagged == k || mode == ModeCluster {
		return nil
	}
	l := &legacy{
		lockKeys: []string{k, redislock.HolderKey(k)},
		keys:     []string{k, redislock.HolderKey(k), redislock.EpochKey(k), redislock.EpochKey(tagged)},
		oldDead:  redislock.Key(redislock.JobsPrefix(k), "dead") + ":",
		newDead:  redislock.Key(redislock.JobsPrefix(tagged), "dead") + ":",
		mark:     "lockworker: moved to " + tagged,
		nodes:    nodes,
		quorum:   quorum,
		timeout:  timeout,
	}
	for _, name := range []string{"stream", "position", "attempts", "counters", "last", "dead"} {
		l.keys = append(l.keys, redislock.Key(redislock.JobsPrefix(k), name), redislock.Key(redislock.JobsPrefix(tagged), name))
	}
	return l
}

// Migrate moves the keys of an older lockworker that used LOCK_KEY without
// a hash tag to the tagged names, once: the new epoch starts at the old
// one (tokens never go back) and the queue, its position, counters and
// dead letters are renamed in one atomic script, and the old lock and
// stream are marked so an older replica can neither lead nor enqueue
// again. While an older lockworker holds the lock it returns an error
// wrapping ErrLegacyLeader and moves nothing; call it again later. After
// one success it costs nothing.
func (b *Backend) Migrate(ctx context.Context) (Migration, error) {
	l := b.legacy
	if l == nil || l.completed.Load() {
		return Migration{}, nil
	}
	if len(l.nodes) > 1 {
		switch state, err := l.run(ctx, "check"); {
		case err != nil:
			return Migration{}, err
		case state.done:
			return Migration{}, nil
		}
		if err := l.markOthers(ctx); err != nil {
			return Migration{}, err
		}
	}
	m, err := l.run(ctx, "move")
	if err != nil {
		return Migration{}, err
	}
	return m.Migration, nil
}

type legacyState struct {
	Migration
	done bool // nothing (more) to move
}

// run runs legacy.lua on the authority in mode "check" or "move".
func (l *legacy) run(ctx context.Context, mode string) (legacyState, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	v, err := legacyScript.Run(ctx, l.nodes[0], l.keys, mode, l.mark, l.oldDead, l.newDead).Slice()
	if err != nil {
		return legacyState{}, fmt.Errorf("backend: older keys: %w", err)
	}
	tag, _ := v[0].(string)
	switch tag {
	case "done", "none":
		l.completed.Store(true)
		return legacyState{done: true}, nil
	case "pending":
		return legacyState{}, nil
	case "moved":
		l.completed.Store(true)
		epoch, _ := v[1].(int64)
		dead, _ := v[2].(int64)
		return legacyState{Migration: Migration{Moved: true, Epoch: epoch, DeadLetters: dead}, done: true}, nil
	case "busy":
		return legacyState{}, fmt.Errorf("%w (its lease has %dms left)", ErrLegacyLeader, v[1])
	case "conflict":
		return legacyState{}, fmt.Errorf("backend: older keys: both %v and its older name exist; move or delete one by hand", v[1])
	}
	return legacyState{}, fmt.Errorf("backend: older keys: unexpected reply %v", v)
}

// markOthers takes the old lock for good on the Redlock nodes other than
// the authority (which legacy.lua marks itself). A quorum of marked nodes
// means no older replica can win the old lock again.
func (l *legacy) markOthers(ctx context.Context) error {
	marked := 1 // the authority, marked by the move or failing it
	var errs []error
	for i, n := range l.nodes[1:] {
		nctx, cancel := context.WithTimeout(ctx, l.timeout)
		v, err := tombstoneScript.Run(nctx, n, l.lockKeys, l.mark).Slice()
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, err))
		case v[0] == "busy":
			return fmt.Errorf("%w (node %d: %dms left)", ErrLegacyLeader, i+1, v[1])
		default:
			marked++
		}
	}
	if marked < l.quorum {
		return fmt.Errorf("backend: older keys: the old lock marked on %d nodes, %d needed: %w", marked, l.quorum, errors.Join(errs...))
	}
	return nil
}
