package redislock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
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
		lockKeys:    []string{k, HolderKey(k)},
		acqKeys:     []string{k, HolderKey(k), EpochKey(k), epochTagKey(k)},
		epochKeys:   []string{EpochKey(k), epochTagKey(k), k, HolderKey(k)},
	}, nil
}

// Quorum is how many nodes must agree: N/2+1, so 1 for a single node.
func (l *Locker) Quorum() int { return l.quorum }

// Acquire tries once to take the lock for workerID. It returns a lease with
// a fresh fencing token, or an error:
//   - a *HeldError (errors.Is ErrNotAcquired) when another holder has it;
//   - otherwise the per-node errors joined, or a validity or epoch failure.
//
// On any failure every node that may hold this attempt's value (it said yes,
// or it failed or timed out, so the write may have landed) is released
// before returning, best effort and bounded by NodeTimeout. Acquire does not
// retry; the caller does, after a jittered delay.
func (l *Locker) Acquire(ctx context.Context, workerID string) (*Lease, error) {
	if workerID == "" {
		return nil, errors.New("redislock: worker ID is required")
	}
	value := rand.Text() // 26 base32 characters, 130 bits from crypto/rand
	bump := "0"
	if l.inlineEpoch {
		bump = "1"
	}
	start := l.now()
	deadline := start.Add(l.validity)
	res := fanOut(ctx, l, nil, func(ctx context.Context, n redis.Scripter) ([]int64, error) {
		v, err := acquireScript.Run(ctx, n, l.acqKeys, value, l.ttlMs, workerID, bump).Int64Slice()
		if err == nil && len(v) != 2 {
			err = fmt.Errorf("unexpected acquire reply of %d values", len(v))
		}
		return v, err
	})
	var (
		yes, maybe []int // granted; failed or timed out (may hold our value)
		held       []int64
		errs       []error
		token      int64
	)
	for i, r := range res {
		switch {
		case r.err != nil:
			maybe = append(maybe, i)
			errs = append(errs, l.nodeErr(i, r.err))
		case r.v[0] == 1:
			yes = append(yes, i)
			token = r.v[1]
		default:
			held = append(held, r.v[1])
		}
	}
	elapsed := l.now().Sub(start)
	fail := func(err error) (*Lease, error) {
		// Tell waiters only if this attempt may have held a quorum: a
		// minority it grabbed (say, the one node where the leader's key had
		// vanished) was never the lock, and a notice for it would wake every
		// follower, each grabbing and releasing it again, in a storm.
		notify := len(yes)+len(maybe) >= l.quorum
		l.cleanup(ctx, append(yes, maybe...), value, workerID, notify)
		return nil, err
	}
	if len(yes) >= l.quorum && elapsed < l.validity {
		if !l.inlineEpoch {
			t, recorded, err := l.bumpEpoch(ctx, value)
			if err != nil {
				return fail(fmt.Errorf("redislock: quorum won but the fencing epoch bump failed, released: %w", err))
			}
			token = t
			if !recorded {
				// The authority holds no key of ours, so Holder would find
				// the token on no node: write it where the quorum is.
				l.recordToken(ctx, yes, value, token)
			}
		}
		if now := l.now(); !now.Before(deadline) {
			return fail(fmt.Errorf("redislock: acquire took %s, past the lease validity %s, released",
				now.Sub(start).Round(time.Millisecond), l.validity))
		}
		return &Lease{value: value, workerID: workerID, token: token, now: l.now, deadline: deadline}, nil
	}
	switch {
	case len(yes) >= l.quorum:
		return fail(errors.Join(fmt.Errorf("redislock: acquire took %s, past the lease validity %s, released",
			elapsed.Round(time.Millisecond), l.validity), errors.Join(errs...)))
	case len(held) > len(l.nodes)-l.quorum:
		return fail(&HeldError{TTL: l.retryAfter(held)})
	default:
		return fail(fmt.Errorf("redislock: acquire: %d of %d nodes granted, %d needed, released: %w",
			len(yes), len(l.nodes), l.quorum, errors.Join(errs...)))
	}
}

// retryAfter is how long until enough of the other holder's keys expire
// for a quorum to be free: with h nodes held and N-q allowed to stay held,
// the (h-(N-q))-th shortest remaining TTL. Keys without a TTL never expire,
// which makes the answer unknown (0).
func (l *Locker) retryAfter(pttls []int64) time.Duration {
	ttls := make([]time.Duration, len(pttls))
	for i, p := range pttls {
		ttls[i] = time.Duration(p) * time.Millisecond
		if p < 0 {
			ttls[i] = -1 // no TTL: sorted last below
		}
	}
	slices.SortFunc(ttls, func(a, b time.Duration) int {
		switch {
		case a == b:
			return 0
		case a < 0:
			return 1
		case b < 0:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	k := len(ttls) - (len(l.nodes) - l.quorum)
	if k < 1 || k > len(ttls) || ttls[k-1] < 0 {
		return 0
	}
	return ttls[k-1]
}

// bumpEpoch bumps the epoch once for value on the epoch authority. recorded
// says the authority is also a lock node holding value, and its holder hash
// now carries the token (Holder takes the token from any node of the
// holder's quorum, for display only).
func (l *Locker) bumpEpoch(ctx context.Context, value string) (token int64, recorded bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	v, err := epochScript.Run(ctx, l.epoch, l.epochKeys, value).Int64Slice()
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("unexpected epoch reply of %d values", len(v))
	}
	if err != nil {
		return 0, false, &NodeError{Node: "epoch authority", Err: err}
	}
	return v[0], v[1] == 1, nil
}

// recordToken writes the token into the holder hash of the nodes that
// granted the lock, for Holder. Best effort: it is for people, not safety.
func (l *Locker) recordToken(ctx context.Context, idx []int, value string, token int64) {
	fanOut(ctx, l, idx, func(ctx context.Context, n redis.Scripter) (int64, error) {
		return setTokenScript.Run(ctx, n, l.lockKeys, value, token).Int64()
	})
}

// cleanup releases a failed attempt on the given nodes, even when ctx is
// already done, bounded by NodeTimeout per node.
func (l *Locker) cleanup(ctx context.Context, idx []int, value, workerID string, notify bool) {
	if len(idx) == 0 {
		return
	}
	_ = l.release(context.WithoutCancel(ctx), idx, value, workerID, notify)
}

// Renew extends the lease on a quorum with compare-and-pexpire; it never
// creates a missing key. On success the lease's deadline becomes the start
// of this renew + TTL - drift. It returns ErrLost (without touching Redis)
// when the local deadline already passed, and ErrLost when too many nodes
// say the key is missing or not ours for a quorum to remain. When nodes
// only failed or timed out it returns their errors joined, not ErrLost:
// the caller may retry while the deadline is ahead. A failed renew never
// moves the deadline.
func (l *Locker) Renew(ctx context.Context, lease *Lease) error {
	if lease == nil {
		return fmt.Errorf("%w: no lease", ErrLost)
	}
	start := l.now()
	if !start.Before(lease.Deadline()) {
		return fmt.Errorf("%w: local deadline passed", ErrLost)
	}
	res := fanOut(ctx, l, nil, func(ctx context.Context, n redis.Scripter) (int64, error) {
		return renewScript.Run(ctx, n, l.lockKeys, lease.value, l.ttlMs).Int64()
	})
	var ok, notMine int
	var errs []error
	for i, r := range res {
		switch {
		case r.err != nil:
			errs = append(errs, l.nodeErr(i, r.err))
		case r.v == 1:
			ok++
		default:
			notMine++
			errs = append(errs, l.nodeErr(i, errNotHeld))
		}
	}
	if ok >= l.quorum {
		deadline := start.Add(l.validity)
		if now := l.now(); !now.Before(deadline) {
			return fmt.Errorf("%w: renew took %s, past the lease validity", ErrLost, now.Sub(start).Round(time.Millisecond))
		}
		lease.extend(deadline)
		return nil
	}
	if notMine > len(l.nodes)-l.quorum {
		return fmt.Errorf("%w: key missing or held by another value on %d of %d nodes", ErrLost, notMine, len(l.nodes))
	}
	return fmt.Errorf("redislock: renew: %d of %d nodes renewed, %d needed: %w", ok, len(l.nodes), l.quorum, errors.Join(errs...))
}

// Release deletes the lock on every node where it still holds this lease's
// value (compare-and-delete, in parallel) and publishes the worker ID on
// ReleasedChannel. The lease is no longer valid afterwards, whatever the
// outcome. A node where the key is missing or foreign is fine (a re-sent
// release may report 0 after it did delete); only node errors are
// returned, joined.
func (l *Locker) Release(ctx context.Context, lease *Lease) error {
	if lease == nil {
		return nil
	}
	lease.setDeadline(time.Time{})
	if err := l.release(ctx, nil, lease.value, lease.workerID, true); err != nil {
		return fmt.Errorf("redislock: release: %w", err)
	}
	return nil
}

func (l *Locker) release(ctx context.Context, idx []int, value, workerID string, notify bool) error {
	ch := ""
	if notify {
		ch = ReleasedChannel(l.key)
	}
	res := fanOut(ctx, l, idx, func(ctx context.Context, n redis.Scripter) (int64, error) {
		return releaseScript.Run(ctx, n, l.lockKeys, value, ch, workerID).Int64()
	})
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, l.nodeErr(i, r.err))
		}
	}
	return errors.Join(errs...)
}

func (l *Locker) nodeErr(i int, err error) error { return &NodeError{Node: l.names[i], Err: err} }

// result is one node's answer; zero for a node that was not contacted.
type result[T any] struct {
	v   T
	err error
}

// fanOut runs fn on the nodes idx (all when nil) in parallel, each with a
// context whose deadline is min(ctx's, now+NodeTimeout), and waits for all.
// The results are indexed by node; nodes not in idx get a zero result.
func fanOut[T any](ctx context.Context, l *Locker, idx []int, fn func(context.Context, redis.Scripter) (T, error)) []result[T] {
	if idx == nil {
		idx = make([]int, len(l.nodes))
		for i := range idx {
			idx[i] = i
		}
	}
	out := make([]result[T], len(l.nodes))
	call := func(i int) {
		ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
		defer cancel()
		v, err := fn(ctx, l.nodes[i])
		out[i] = result[T]{v: v, err: err}
	}
	if len(idx) == 1 {
		call(idx[0])
		return out
	}
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { call(i) })
	}
	wg.Wait()
	return out
}
