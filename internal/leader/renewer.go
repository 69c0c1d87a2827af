package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/redislock"
)

// Group renews many leases in one call, by index (redislock.Group).
type Group interface {
	Renew(ctx context.Context, leases []*redislock.Lease) []error
}

var _ Group = (*redislock.Group)(nil)

// RenewerConfig configures a Renewer.
type RenewerConfig struct {
	// Group renews the partitions' leases, indexed by partition. Required.
	Group Group
	// Partitions is how many lanes share the Renewer (the Group's size).
	// Required, >= 1.
	Partitions int
	// Interval is RENEW_INTERVAL: the period of the renewal ticks.
	// Required, > 0.
	Interval time.Duration
}

// The requests that arrive together are those that come within
// gatherQuiet of each other, gatherMax in all: the lanes' timers fire at
// the same tick, and each request is a few goroutine hops behind its
// timer.
const (
	gatherQuiet = 2 * time.Millisecond
	gatherMax   = 25 * time.Millisecond
)

// errRenewerStopped answers a request that came after the Renewer's Run
// returned.
var errRenewerStopped = errors.New("leader: the renewer has stopped")

// Renewer is a replica's one renewal path: each lane asks it to renew its
// own lease, and it sends the requests that arrive together in one
// redislock.Group call (one script per node for all of them), so a
// replica that leads many partitions renews them in one round trip. Each
// lane gets the answer of a call made for its request: there is no
// cache, so no answer is older than the request. The lanes arm their
// renew timers to the Renewer's ticks (Next), which is what makes their
// requests arrive together.
type Renewer struct {
	cfg   RenewerConfig
	zero  time.Time // the origin of the ticks, on the monotonic clock
	reqs  chan renewRequest
	ended chan struct{} // closed when Run returns
}

type renewRequest struct {
	partition int
	lease     *redislock.Lease
	answer    chan error // buffered: Run never blocks on it
}

// NewRenewer validates cfg and returns a Renewer; Run must run for Renew
// to answer.
func NewRenewer(cfg RenewerConfig) (*Renewer, error) {
	var errs []error
	if cfg.Group == nil {
		errs = append(errs, errors.New("leader: Renewer needs a Group"))
	}
	if cfg.Partitions < 1 {
		errs = append(errs, errors.New("leader: Renewer needs at least one partition"))
	}
	if cfg.Interval <= 0 {
		errs = append(errs, errors.New("leader: Renewer Interval must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Renewer{cfg: cfg, zero: time.Now(), reqs: make(chan renewRequest), ended: make(chan struct{})}, nil
}

// Next is how long until the next tick: a multiple of Interval since the
// Renewer was made, never more than Interval away.
func (r *Renewer) Next() time.Duration {
	return r.cfg.Interval - time.Since(r.zero)%r.cfg.Interval
}

// Renew renews lease, partition's, in the next call, and returns what
// that call said of it (see redislock.Locker.Renew), or ctx's error.
func (r *Renewer) Renew(ctx context.Context, partition int, lease *redislock.Lease) error {
	if partition < 0 || partition >= r.cfg.Partitions {
		return fmt.Errorf("leader: renew: partition %d of %d", partition, r.cfg.Partitions)
	}
	q := renewRequest{partition: partition, lease: lease, answer: make(chan error, 1)}
	select {
	case r.reqs <- q:
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ended:
		return errRenewerStopped
	}
	select {
	case err := <-q.answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run answers requests until ctx is done, and returns nil. Run it for as
// long as any lane may renew.
func (r *Renewer) Run(ctx context.Context) error {
	defer close(r.ended)
	var carry []renewRequest
	for {
		if len(carry) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case q := <-r.reqs:
				carry = append(carry, q)
			}
		}
		var batch []renewRequest
		batch, carry = r.gather(ctx, carry[0])
		leases := make([]*redislock.Lease, r.cfg.Partitions)
		for _, q := range batch {
			leases[q.partition] = q.lease
		}
		errs := r.cfg.Group.Renew(ctx, leases)
		for _, q := range batch {
			q.answer <- errs[q.partition]
		}
	}
}

// gather is the batch of the requests that arrive together with first:
// within gatherQuiet of each other, gatherMax in all. A second request
// for a partition already in the batch (a lane asks once at a time, so
// only one whose first was abandoned) ends the batch and is carried to
// the next.
func (r *Renewer) gather(ctx context.Context, first renewRequest) (batch, carry []renewRequest) {
	batch = []renewRequest{first}
	in := map[int]bool{first.partition: true}
	quiet := time.NewTimer(gatherQuiet)
	defer quiet.Stop()
	deadline := time.NewTimer(gatherMax)
	defer deadline.Stop()
	for {
		select {
		case q := <-r.reqs:
			if in[q.partition] {
				return batch, []renewRequest{q}
			}
			in[q.partition] = true
			batch = append(batch, q)
			quiet.Reset(gatherQuiet)
		case <-quiet.C:
			return batch, nil
		case <-deadline.C:
			return batch, nil
		case <-ctx.Done():
			return batch, nil
		}
	}
}
