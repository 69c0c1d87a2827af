package redislock

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotAcquired means the lock is held by someone else. Acquire returns it
// wrapped in a *HeldError that says when a retry can succeed.
var ErrNotAcquired = errors.New("redislock: not acquired")

// ErrLost means the lease is gone: its local deadline passed, or renew found
// the key missing or held by another value on too many nodes for a quorum.
// Stop the work; a fresh Acquire brings a fresh token.
var ErrLost = errors.New("redislock: lease lost")

// errNotHeld is one node's "this key is not ours" during a renew that may
// still reach a quorum elsewhere. It is deliberately not ErrLost.
var errNotHeld = errors.New("redislock: key not held by this lease")

// HeldError is the error of an Acquire that found the lock held by another
// holder. It unwraps to ErrNotAcquired.
type HeldError struct {
	// TTL is how long until enough of the holder's keys expire for a retry
	// to be able to succeed (for one node: the key's remaining TTL). Zero
	// when unknown, e.g. a key set without a TTL.
	TTL time.Duration
	// Token is the holder's fencing token, as its lock value carries it
	// (0 when unknown): a token handed out, which the next acquire must
	// pass (Acquire's floor) even if Redis loses the epoch meanwhile.
	Token int64
}

func (e *HeldError) Error() string {
	if e.TTL <= 0 {
		return "redislock: not acquired: held by another holder"
	}
	return fmt.Sprintf("redislock: not acquired: held by another holder for %s", e.TTL)
}

// Unwrap returns ErrNotAcquired.
func (e *HeldError) Unwrap() error { return ErrNotAcquired }

// NodeError is the failure of one node. Several are combined with
// errors.Join. Node is the name from Config.NodeNames (never a password).
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "redislock: node " + e.Node + ": " + e.Err.Error() }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }
