package redislock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Acquire tries once to take the lock for workerID. It returns a lease with
// a fresh fencing token, above floor (the highest token the caller has
// observed: the epoch is raised to it first, so a token is never handed
// out twice even after Redis lost the epoch), or an error:
//   - a *HeldError (errors.Is ErrNotAcquired) when another holder has it,
//     with the token its lock value carries;
//   - otherwise the per-node errors joined, or a validity or epoch failure.
//
// On any failure every node that may hold this attempt's value (it said yes,
// or it failed or timed out, so the write may have landed) is released
// before returning, best effort and bounded by NodeTimeout. Acquire does not
// retry; the caller does, after a jittered delay.
func (l *Locker) Acquire(ctx context.Context, workerID string, floor int64) (*Lease, error) {
	if workerID == "" {
		return nil, errors.New("redislock: worker ID is required")
	}
	if floor < 0 {
		return nil, errors.New("redislock: acquire: negative floor")
	}
	// The prefix "<secret>:" of the value, 130 bits from crypto/rand; the
	// scripts compare it before any change.
	a := &attempt{l: l, workerID: workerID, value: rand.Text() + ":", start: l.now(), floor: floor, seen: -1}
	mint := []any{a.value, l.ttlArg, workerID, flag(true), floor}
	var args []any // for the nodes that mint no token
	if len(l.nodes) > 1 || l.epochNode < 0 {
		args = []any{a.value, l.ttlArg, workerID, flag(false), 0}
	}
	res := fanOut(ctx, l, nil, func(ctx context.Context, i int, n redis.Scripter) (acquireReply, error) {
		var v []int64
		var err error
		switch c, plain := n.(setNX); {
		case i == l.epochNode:
			// The authority mints the token in the same script when it
			// grants, and its replicas acknowledge it in the same round trip.
			v, err = l.replicated(ctx, acquireScript, l.acqKeys, mint, granted)
		case plain:
			v, err = l.plainAcquire(ctx, n, c, a.value+"0:"+workerID, args)
		default:
			v, err = acquireScript.Run(ctx, n, l.acqKeys, args...).Int64Slice()
		}
		if err != nil {
			return acquireReply{}, err
		}
		return decodeAcquire(v)
	})
	a.tally(res)
	elapsed := l.now().Sub(a.start)
	switch {
	case len(a.yes) >= l.quorum && elapsed < l.validity:
		return a.win(ctx)
	case len(a.yes) >= l.quorum:
		return a.fail(ctx, errors.Join(a.tooSlow(elapsed), errors.Join(a.errs...)))
	case len(a.held) > len(l.nodes)-l.quorum:
		return a.fail(ctx, &HeldError{TTL: l.retryAfter(a.held), Token: a.heldToken})
	default:
		return a.fail(ctx, fmt.Errorf("redislock: acquire: %d of %d nodes granted, %d needed, released: %w",
			len(a.yes), len(l.nodes), l.quorum, errors.Join(a.errs...)))
	}
}

// setNX is a node client that can send SET (every go-redis client; other
// Scripters run acquire.lua alone).
type setNX interface {
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
}

// plainAcquire is acquire.lua's answer on a node that mints no token, in
// one plain SET NX PX when the key is free: no script is needed to create
// it, since SET NX never changes a value it did not write (renew and
// release, which do, stay compare-before-change scripts). Only when the
// key is taken does acquire.lua run, in a second round trip, to tell this
// attempt's own key (a re-sent SET whose reply was lost) from another's
// and read its TTL. value is what acquire.lua writes there,
// "<secret>:0:<worker>"; args are acquire.lua's.
func (l *Locker) plainAcquire(ctx context.Context, n redis.Scripter, c setNX, value string, args []any) ([]int64, error) {
	err := c.SetArgs(ctx, l.keys.Lock(), value, redis.SetArgs{Mode: "NX", TTL: l.ttl}).Err()
	if err == nil {
		return []int64{1, 0, -1}, nil
	}
	if !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return acquireScript.Run(ctx, n, l.acqKeys, args...).Int64Slice()
}

// acquireReply is acquire.lua's answer (see its header), decoded in one
// place, decodeAcquire.
type acquireReply struct {
	granted bool  // the node holds this attempt's value after the call
	token   int64 // granted: the token the value carries (0: none minted)
	seen    int64 // granted: the epoch found before the mint (-1: none minted)
	pttl    int64 // refused: the other holder's remaining TTL (-1: none)
	held    int64 // refused: the token the other holder's value carries
}

// decodeAcquire reads acquire.lua's {1, token, seen} or {0, pttl, held}.
func decodeAcquire(v []int64) (acquireReply, error) {
	switch {
	case len(v) != 3:
		return acquireReply{}, fmt.Errorf("unexpected acquire reply of %d values", len(v))
	case v[0] == 1:
		return acquireReply{granted: true, token: v[1], seen: v[2]}, nil
	}
	return acquireReply{pttl: v[1], held: v[2]}, nil
}

// granted says an acquire reply holds the lock (on the authority: and so
// minted a token).
func granted(v []int64) bool {
	r, err := decodeAcquire(v)
	return err == nil && r.granted
}

// attempt is one Acquire: its random value and what the nodes answered.
type attempt struct {
	l        *Locker
	workerID string
	value    string // the prefix "<secret>:" of the value on the nodes
	start    time.Time
	yes      []int   // nodes that granted
	maybe    []int   // nodes that failed or timed out: they may hold the value
	held     []int64 // remaining TTLs of the nodes held by another value
	errs     []error
	token    int64 // minted by the authority's grant, or bumped after the quorum
	minted   bool  // the authority granted and minted token
	floor    int64 // the caller's highest observed token
	seen     int64 // the epoch the authority had before minting; -1: unknown
	// heldToken is the highest token the other holder's lock values carry.
	heldToken int64
}

func (a *attempt) tally(res []result[acquireReply]) {
	for i, r := range res {
		switch {
		case r.err != nil:
			a.maybe = append(a.maybe, i)
			a.errs = append(a.errs, a.l.nodeErr(i, r.err))
		case r.v.granted:
			a.yes = append(a.yes, i)
			if i == a.l.epochNode && r.v.token > 0 {
				a.token, a.minted, a.seen = r.v.token, true, r.v.seen
			}
		default:
			a.held = append(a.held, r.v.pttl)
			a.heldToken = max(a.heldToken, r.v.held)
		}
	}
}

// win turns a quorum into a lease. When the authority did not grant (it is
// no lock node, or another value held it there, or it failed), the epoch is
// bumped on it now, in a second round trip; the lease is refused if that
// took it past validity. A token the authority minted for an attempt that
// then failed is never used: the job store fences on the highest token it
// has seen, so that token fences no one (see FenceKey).
func (a *attempt) win(ctx context.Context) (*Lease, error) {
	l := a.l
	if !a.minted {
		t, recorded, seen, err := l.bumpEpoch(ctx, a.value, a.floor)
		if err != nil {
			return a.fail(ctx, fmt.Errorf("redislock: quorum won but the fencing epoch bump failed, released: %w", err))
		}
		a.token, a.seen = t, seen
		if !recorded {
			// The authority holds no key of ours, so Holder would find
			// the token on no node: write it where the quorum is.
			l.recordToken(ctx, a.yes, a.value, a.token)
		}
	}
	deadline := a.start.Add(l.validity)
	if now := l.now(); !now.Before(deadline) {
		return a.fail(ctx, a.tooSlow(now.Sub(a.start)))
	}
	return &Lease{value: a.value, workerID: a.workerID, token: a.token, seen: a.seen, now: l.now, deadline: deadline}, nil
}

func (a *attempt) tooSlow(elapsed time.Duration) error {
	return fmt.Errorf("redislock: acquire took %s, past the lease validity %s, released",
		elapsed.Round(time.Millisecond), a.l.validity)
}

// fail releases every node that may hold this attempt's value and returns
// err. It never publishes a release notice: a failed attempt was never a
// leadership anyone waits for, and a notice would wake every follower at
// once, each failing the same way (with the epoch authority down, every
// attempt wins the quorum and fails at the bump) and waking the others
// again, in a storm. A follower that saw this attempt's key waits out its
// retry delay instead.
func (a *attempt) fail(ctx context.Context, err error) (*Lease, error) {
	a.l.cleanup(ctx, append(a.yes, a.maybe...), a.value, a.workerID)
	return nil, err
}

// retryAfter is how long until enough of the other holder's keys expire
// for a quorum to be free: with h nodes held and N-q allowed to stay held,
// the (h-(N-q))-th shortest remaining TTL. Keys without a TTL never expire,
// which makes the answer unknown (0). A PTTL of 0 is a key in its last
// millisecond (an attempt that came right at the expiry, Redis's clock
// frozen for the script): it counts as 1 ms, not as unknown, or the
// caller would wait a whole retry interval for a lock free a moment later.
func (l *Locker) retryAfter(pttls []int64) time.Duration {
	ttls := make([]time.Duration, len(pttls))
	for i, p := range pttls {
		ttls[i] = max(time.Duration(p)*time.Millisecond, time.Millisecond)
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

// cleanup releases a failed attempt on the given nodes, without a notice,
// even when ctx is already done, bounded by NodeTimeout per node.
func (l *Locker) cleanup(ctx context.Context, idx []int, value, workerID string) {
	if len(idx) == 0 {
		return
	}
	_ = l.release(context.WithoutCancel(ctx), idx, value, workerID, false)
}
