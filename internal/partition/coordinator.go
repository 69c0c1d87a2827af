package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Phase is where one partition's lane stands, as the coordinator reads
// its chart.
type Phase int

// The phases of a lane.
const (
	Idle       Phase = iota // not contending (idle)
	Contending              // waiting_to_acquire_lock, acquiring_lock
	Owning                  // working, renew_lock
	Leaving                 // pause_work, cleanup, releasing_lock
)

func (p Phase) String() string {
	switch p {
	case Idle:
		return "idle"
	case Contending:
		return "contending"
	case Owning:
		return "owning"
	case Leaving:
		return "leaving"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Lane is one partition's state chart as the coordinator drives it.
// Contend and Leave must not block.
type Lane interface {
	Phase() Phase
	// Token is the fencing token of the lease the lane owns; 0 otherwise.
	Token() int64
	// Avoiding reports that this replica must not lead the partition for
	// now (it stepped down from it on an operator's request).
	Avoiding() bool
	// Contend starts contending for the partition (TRY_ACQUIRE_LOCK from
	// idle); it does nothing in any other phase.
	Contend()
	// Leave stops contending, or hands an owned partition over (STOP:
	// stop the work, release the lock with the notice, idle).
	Leave()
}

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// Self is this replica's worker ID. Required.
	Self string
	// Lanes are this replica's lanes, one per partition, by partition.
	// Required: at least one.
	Lanes []Lane
	// Members reads the live members of the fleet from the registry,
	// this replica's own record included or not (it is replaced by what
	// the lanes say). Required.
	Members func(ctx context.Context) ([]Member, error)
	// ReadInterval is how often the registry is read when nothing
	// announces a change. Required, > 0.
	ReadInterval time.Duration
	// Settle is how long a member that owns nothing must have been seen
	// live before others hand partitions over to it: a replica that
	// restarts does not pull partitions on its first breath, and one that
	// flickers in the registry pulls none. Default 2 x ReadInterval.
	Settle time.Duration
	// MaxMoves bounds this replica's handovers in flight. Default 4.
	MaxMoves int
	// FreeGrace is how long a partition may have no owner before every
	// member contends for it, not only the one Assign names. Required, > 0.
	FreeGrace time.Duration
	// Now reads the clock. Default time.Now.
	Now func() time.Time
	// Logger defaults to discarding.
	Logger *slog.Logger
}

func (cfg *CoordinatorConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("partition: "+format, args...)) }
	if cfg.Self == "" {
		bad("Self is required")
	}
	if len(cfg.Lanes) < 1 || len(cfg.Lanes) > Max {
		bad("Lanes: %d lanes, want 1 to %d", len(cfg.Lanes), Max)
	}
	if cfg.Members == nil {
		bad("Members is required")
	}
	if cfg.ReadInterval <= 0 {
		bad("ReadInterval must be positive")
	}
	if cfg.FreeGrace <= 0 {
		bad("FreeGrace must be positive")
	}
	if cfg.Settle < 0 || cfg.MaxMoves < 0 {
		bad("Settle and MaxMoves must not be negative")
	}
	return errors.Join(errs...)
}

// Coordinator decides, from the registry and release notices, which
// partitions this replica contends for and which it hands over: it
// computes Assign over the members it sees and moves its own lanes
// towards it. A replica given no partition stands by for every one. The
// lease of each partition, not the coordinator, is what keeps one owner
// at a time.
type Coordinator struct {
	cfg CoordinatorConfig
	log *slog.Logger

	read   chan struct{} // read the registry soon
	replan chan struct{} // plan again with what is known

	mu     sync.Mutex
	status Status
}

// Status is what the coordinator last decided, for /status and metrics.
type Status struct {
	// Quota is how many partitions the last plan gave each member it
	// counted, by ID.
	Quota map[string]int
	// Owner is who Assign would have own each partition.
	Owner []string
	// Moving counts this replica's handovers in flight.
	Moving int
	// Planned is when the last plan ran (zero before the first).
	Planned time.Time
	// ReadOK: the last registry read got an answer.
	ReadOK bool
}

// NewCoordinator validates cfg and returns a Coordinator.
func NewCoordinator(cfg CoordinatorConfig) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Settle == 0 {
		cfg.Settle = 2 * cfg.ReadInterval
	}
	if cfg.MaxMoves == 0 {
		cfg.MaxMoves = 4
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Coordinator{
		cfg: cfg, log: cfg.Logger,
		read:   make(chan struct{}, 1),
		replan: make(chan struct{}, 1),
	}, nil
}

// MembersChanged says the registry may have changed (a fleet notice, or a
// release notice: its releaser's record changes next): read it soon. It
// never blocks; a burst of calls is one read.
func (c *Coordinator) MembersChanged() { poke(c.read) }

// LaneChanged says a lane moved (a transition): plan again. It never
// blocks.
func (c *Coordinator) LaneChanged() { poke(c.replan) }

// Status is the last plan.
func (c *Coordinator) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// readDebounce spaces the registry reads that notices ask for: the first
// notice after a quiet spell is read at once (a replica on its way out
// removes its record before it releases, so the others contend for its
// partitions within a round trip), and a burst that follows (its release
// notices, one per partition) is gathered into one read this long after.
const readDebounce = 20 * time.Millisecond

// Run plans until ctx is done, and returns nil. It never stops a lane on
// the way out: the owner of the lanes stops them all.
func (c *Coordinator) Run(ctx context.Context) error {
	p := newPlanner(c.cfg)
	tick := time.NewTimer(0)
	defer tick.Stop()
	var readFails int
	readOK := false
	var lastRead time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-c.read:
			if wait := readDebounce - time.Since(lastRead); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		case <-c.replan:
			c.plan(p, readOK)
			continue
		}
		// This read covers every notice so far.
		select {
		case <-c.read:
		default:
		}
		lastRead = time.Now()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.ReadInterval)
		ms, err := c.cfg.Members(rctx)
		cancel()
		readOK = err == nil
		switch {
		case err == nil:
			readFails = 0
			p.members(ms)
		case ctx.Err() != nil:
			return nil
		default:
			readFails++
			if readFails == 1 {
				c.log.Warn("partitions: could not read the registry; keeping the last plan", "err", err)
			}
		}
		c.plan(p, readOK)
		tick.Reset(c.cfg.ReadInterval)
	}
}

func (c *Coordinator) plan(p *planner, readOK bool) {
	st := p.plan()
	st.ReadOK = readOK
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
}
