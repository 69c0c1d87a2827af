package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrStaleToken means a newer leader exists: a fenced write with a higher
// token reached the store (or an operator raised the epoch above this
// token), and nothing was changed.
var ErrStaleToken = errors.New("jobs: stale fencing token")

// ErrLeaseInvalid ends Process when the lease is no longer valid (its
// deadline passed) while the context was still live.
var ErrLeaseInvalid = errors.New("jobs: lease no longer valid")

// ErrLeaseEnding is a handler's error for a job it stopped, or did not
// start, because the lease's local deadline is too near (the HTTP
// handler's LeaseMargin, or the exec command's supervisor killing it at
// the deadline it knew): not the job's failure but the leadership's end.
// The job counts one delivery and is delivered again by the next leader;
// Process stops taking jobs and returns an error wrapping
// ErrLeaseInvalid.
var ErrLeaseEnding = errors.New("jobs: the lease is ending")

// ErrHandlerPanicked is the failure of a job attempt whose handler
// panicked; the panic's value follows it in the message.
var ErrHandlerPanicked = errors.New("jobs: handler panicked")

// ErrPermanent marks a handler's error that no retry can fix (the
// service answered 4xx: a bad request, a missing resource): the job fails
// for good at once, whatever its attempt (its key parks, or it is
// dead-lettered: WorkerConfig.OnFailure).
var ErrPermanent = errors.New("jobs: permanent failure")

// ErrRedisFull is part of an enqueue's error when Redis refused the write
// because its memory is full: used memory is above maxmemory, and with
// noeviction (the only policy lockworker leads on) Redis refuses new
// writes rather than evict what it holds. Nothing of the enqueue was
// written; what was acknowledged before stays.
var ErrRedisFull = errors.New("jobs: Redis is full (used memory above maxmemory; it refuses new writes rather than evict): " +
	"raise maxmemory, or free memory (the leader trims jobs as it commits them; dead letters stay until requeued)")

// full wraps a write's error in ErrRedisFull when Redis refused it for
// memory (OOM).
func full(err error) error {
	if err != nil && !errors.Is(err, ErrRedisFull) && strings.Contains(err.Error(), "OOM command not allowed") {
		return fmt.Errorf("%w: %w", ErrRedisFull, err)
	}
	return err
}

// ErrNotFound is returned by Requeue for an ID that is not a dead letter.
var ErrNotFound = errors.New("jobs: no such dead letter")

// StaleError carries the numbers behind an ErrStaleToken: the token, and
// the store's fence it was below (in Epoch: the highest token seen).
type StaleError struct {
	Token, Epoch int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%v: token %d, highest token seen %d", ErrStaleToken, e.Token, e.Epoch)
}

// Unwrap makes errors.Is(err, ErrStaleToken) hold.
func (e *StaleError) Unwrap() error { return ErrStaleToken }

// staleError builds a StaleError from the fence of a stale reply (fence.lua).
func staleError(token int64, rest []any) error {
	var epoch int64
	if len(rest) > 0 {
		epoch, _ = strconv.ParseInt(str(rest[0]), 10, 64)
	}
	return &StaleError{Token: token, Epoch: epoch}
}
