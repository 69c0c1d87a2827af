package redislock

import (
	"context"
	"errors"
	"fmt"
)

// Epoch reads the fencing epoch on the epoch authority: the last token
// handed out (0 before the first).
func (l *Locker) Epoch(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	e, err := readEpochScript.Run(ctx, l.epoch, []string{l.keys.Epoch()}).Int64()
	if err != nil {
		return 0, fmt.Errorf("redislock: read epoch: %w", &NodeError{Node: "epoch authority", Err: err})
	}
	return e, nil
}

// RaiseEpoch raises the fencing epoch on the epoch authority to at least n
// and never lowers it; every token handed out afterwards is above n. It
// also raises the job store's fence (FenceKey) to the epoch after the
// raise (with one node the fence is the epoch). It returns the epoch before and after. A leader whose token is now
// below the epoch finds its fenced writes rejected as stale and gives its
// leadership up; the next acquisition gets a token above n.
func (l *Locker) RaiseEpoch(ctx context.Context, n int64) (before, after int64, err error) {
	if n < 0 {
		return 0, 0, fmt.Errorf("redislock: raise epoch: %d is negative", n)
	}
	ctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	// Through the WAIT step: a raise lost in a failover would let tokens
	// at or below n be handed out again.
	v, err := l.replicated(ctx, raiseScript, l.fixKeys, []any{n},
		func([]int64) bool { return true }) // the fence may move when the epoch does not
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("unexpected raise reply of %d values", len(v))
	}
	if err != nil {
		return 0, 0, fmt.Errorf("redislock: raise epoch: %w", &NodeError{Node: "epoch authority", Err: err})
	}
	return v[0], v[1], nil
}

// Reissue gives a held lease a new fencing token above floor: the epoch
// is raised to at least floor, then bumped, on the epoch authority. It is
// for a holder that knows a token higher than the one it was just given
// (the authority lost its data and counts again from 1). The returned
// lease replaces lease (same lock value and deadline); the token is also
// written to the holder record, for people. ErrLost when the lease's
// deadline passed.
func (l *Locker) Reissue(ctx context.Context, lease *Lease, floor int64) (*Lease, error) {
	if lease == nil || !lease.Valid() {
		return nil, fmt.Errorf("%w: no valid lease to reissue", ErrLost)
	}
	if floor < 0 {
		return nil, errors.New("redislock: reissue: negative floor")
	}
	ectx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	v, err := l.replicated(ectx, reissueScript, l.fixKeys, []any{lease.value, floor},
		func([]int64) bool { return true })
	cancel()
	if err == nil && len(v) != 1 {
		err = fmt.Errorf("unexpected reissue reply of %d values", len(v))
	}
	if err != nil {
		return nil, fmt.Errorf("redislock: reissue: %w", &NodeError{Node: "epoch authority", Err: err})
	}
	token := v[0]
	l.recordToken(ctx, nil, lease.value, token)
	next := &Lease{value: lease.value, workerID: lease.workerID, token: token, seen: -1, now: l.now, deadline: lease.Deadline()}
	if !next.Valid() {
		return nil, fmt.Errorf("%w: the lease ended while its token was reissued", ErrLost)
	}
	return next, nil
}
