package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/redislock"
)

// heartbeat is a partitioned replica's pulse: every RENEW_INTERVAL it
// renews every lease the replica holds together (redislock.Group: one
// script per node for all of them, where each partition's chart would
// send its own), then refreshes the replica's registry record, so the
// record's expiry follows the leases'. Each chart still renews on its own
// timer, through beatLock, which answers from the heartbeat's last round
// when that round covered its lease and renews alone when it did not.
type heartbeat struct {
	group    *redislock.Group
	interval time.Duration
	leases   func() []*redislock.Lease // by partition; nil where none is held
	refresh  func()
	log      *slog.Logger

	mu      sync.Mutex
	renewed []renewal // by partition: the last round's outcome
}

// renewal is what a heartbeat round did for one lease: renewed (err nil),
// lost (ErrLost), or not known (a node error), at the round's start.
type renewal struct {
	lease *redislock.Lease
	at    time.Time
	err   error
}

func newHeartbeat(group *redislock.Group, partitions int, interval time.Duration, log *slog.Logger) *heartbeat {
	return &heartbeat{group: group, interval: interval, log: log, renewed: make([]renewal, partitions)}
}

// Run beats until ctx is done, and returns nil.
func (h *heartbeat) Run(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		h.beat(ctx)
	}
}

// beat is one round: every held lease renewed at once, then the record.
func (h *heartbeat) beat(ctx context.Context) {
	defer h.refresh()
	leases := h.leases()
	held := 0
	for _, l := range leases {
		if l != nil {
			held++
		}
	}
	if held == 0 {
		return
	}
	start := time.Now()
	errs := h.group.Renew(ctx, leases)
	failed := 0
	h.mu.Lock()
	for i, l := range leases {
		if l != nil {
			h.renewed[i] = renewal{lease: l, at: start, err: errs[i]}
			if errs[i] != nil && !errors.Is(errs[i], redislock.ErrLost) {
				failed++
			}
		}
	}
	h.mu.Unlock()
	if failed > 0 {
		h.log.Debug("heartbeat: some leases not renewed together; each chart renews its own", "failed", failed, "held", held)
	}
}

// answer is the last round's outcome for lease of partition p, when that
// round covered it within the last interval and had an answer (renewed
// or lost); ok false sends the chart's renew to Redis on its own.
func (h *heartbeat) answer(p int, lease *redislock.Lease) (err error, ok bool) {
	h.mu.Lock()
	r := h.renewed[p]
	h.mu.Unlock()
	if r.lease != lease || time.Since(r.at) > h.interval {
		return nil, false
	}
	if r.err == nil || errors.Is(r.err, redislock.ErrLost) {
		return r.err, true
	}
	return nil, false
}

// lock is partition p's lock as its leader sees it (beatLock).
func (h *heartbeat) lock(p int, l *redislock.Locker) leader.Lock {
	return beatLock{Locker: l, beat: h, p: p}
}

// beatLock is a partition's lock whose renewals the heartbeat does.
type beatLock struct {
	*redislock.Locker
	beat *heartbeat
	p    int
}

var _ leader.Lock = beatLock{}

// Renew answers from the heartbeat's last round when it covered lease,
// and renews on its own when it did not.
func (b beatLock) Renew(ctx context.Context, lease *redislock.Lease) error {
	if err, ok := b.beat.answer(b.p, lease); ok {
		return err
	}
	return b.Locker.Renew(ctx, lease)
}
