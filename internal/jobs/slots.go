package jobs

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// MaxConcurrency is the largest Slots count (JOB_CONCURRENCY's bound).
const MaxConcurrency = 1024

// DefaultConcurrency is NewSlots' count by default (JOB_CONCURRENCY's);
// docs/queue.md says why.
const DefaultConcurrency = 32

// Slots is the replica-wide limit on jobs in flight (JOB_CONCURRENCY),
// shared by the workers of every partition the replica leads: a run
// holds one slot while it executes its jobs, one at a time. Waiters are
// served first come, first served (golang.org/x/sync/semaphore), so no
// partition starves another. Safe for concurrent use.
type Slots struct {
	n     int
	sem   *semaphore.Weighted
	inUse atomic.Int64
}

// NewSlots is n slots, 1 to MaxConcurrency.
func NewSlots(n int) (*Slots, error) {
	if n < 1 || n > MaxConcurrency {
		return nil, fmt.Errorf("jobs: Slots must be between 1 and %d, got %d", MaxConcurrency, n)
	}
	return &Slots{n: n, sem: semaphore.NewWeighted(int64(n))}, nil
}

// Size is how many slots there are.
func (s *Slots) Size() int { return s.n }

// InUse is how many slots are held now: the replica's jobs in flight,
// and for a moment the slots a worker took to claim with.
func (s *Slots) InUse() int { return int(s.inUse.Load()) }

// acquire waits for a slot, in turn, until ctx ends (then it has none).
func (s *Slots) acquire(ctx context.Context) error {
	if err := s.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	s.inUse.Add(1)
	return nil
}

// tryAcquire takes a slot if one is free and nobody waits for one.
func (s *Slots) tryAcquire() bool {
	if !s.sem.TryAcquire(1) {
		return false
	}
	s.inUse.Add(1)
	return true
}

// release gives n slots back.
func (s *Slots) release(n int) {
	if n > 0 {
		s.inUse.Add(-int64(n))
		s.sem.Release(int64(n))
	}
}
