package daemon

import (
	"context"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/roster"
)

// maxMoves bounds a replica's handovers in flight: a join or a rolling
// restart moves partitions a few at a time, each in milliseconds, never
// stopping the work of many at once.
const maxMoves = 4

// assemblePartitions builds what shares the partitions out over the
// fleet: the coordinator, which reads the registry (every half refresh
// period, and at once on a fleet or release notice) and makes each lane
// contend or leave; and the heartbeat's sources (built before the lanes).
func (d *Daemon) assemblePartitions() error {
	every := backend.RegistryInterval(d.cfg)
	lanes := make([]partition.Lane, len(d.lanes))
	for i, l := range d.lanes {
		lanes[i] = laneView{l}
	}
	var err error
	d.coord, err = partition.NewCoordinator(partition.CoordinatorConfig{
		Self:         d.cfg.WorkerID,
		Lanes:        lanes,
		Members:      d.members,
		ReadInterval: every / 2,
		Settle:       2 * every,
		MaxMoves:     maxMoves,
		FreeGrace:    2 * d.cfg.RetryInterval,
		Logger:       d.log,
	})
	d.beat.leases = d.heldLeases
	d.beat.refresh = d.reporter.Refresh
	return err
}

// members reads the fleet's live members from the registry.
func (d *Daemon) members(ctx context.Context) ([]partition.Member, error) {
	records, err := d.roster.List(ctx)
	if err != nil {
		return nil, err
	}
	d.observeRecords(records)
	out := make([]partition.Member, 0, len(records))
	for _, r := range records {
		m := partition.Member{ID: r.WorkerID, Owned: make(map[int]int64, len(r.Partitions)),
			Contending: r.Contending, Avoiding: r.Avoiding}
		for _, o := range r.Partitions {
			m.Owned[o.Partition] = o.Token
		}
		out = append(out, m)
	}
	return out, nil
}

// heldLeases are the lanes' leases, by partition (nil where none is held).
func (d *Daemon) heldLeases() []*redislock.Lease {
	out := make([]*redislock.Lease, len(d.lanes))
	for i, l := range d.lanes {
		out[i] = l.leader.HeldLease()
	}
	return out
}

// laneView is a lane as the coordinator drives it.
type laneView struct{ l *lane }

var _ partition.Lane = laneView{}

func (v laneView) Phase() partition.Phase { return phaseOf(v.l.machine.State()) }
func (v laneView) Token() int64           { return v.l.leader.Status().Token }
func (v laneView) Avoiding() bool         { return v.l.avoiding() }
func (v laneView) Contend()               { v.l.machine.Contend() }
func (v laneView) Leave()                 { v.l.machine.Leave() }

// phaseOf is where a chart in state s stands for the coordinator.
func phaseOf(s machine.State) partition.Phase {
	switch s {
	case machine.AcquiringLock, machine.WaitingToAcquireLock:
		return partition.Contending
	case machine.Working, machine.RenewLock:
		return partition.Owning
	case machine.PauseWork, machine.Cleanup, machine.ReleasingLock:
		return partition.Leaving
	}
	return partition.Idle
}

// partitionsOf is what a partitioned replica's record says of its lanes:
// the partitions it leads (with tokens), waits for, and avoids.
func (d *Daemon) partitionsOf() (owned []roster.Owned, contending, avoiding []int) {
	for _, l := range d.lanes {
		switch phaseOf(l.machine.State()) {
		case partition.Owning:
			if s := l.leader.Status(); s.Leader {
				owned = append(owned, roster.Owned{Partition: l.n, Token: s.Token})
			}
		case partition.Contending:
			contending = append(contending, l.n)
		}
		if l.avoiding() {
			avoiding = append(avoiding, l.n)
		}
	}
	return owned, contending, avoiding
}

// stepDownHold is how long a partition this replica stepped down from is
// left to the others.
func (d *Daemon) stepDownHold() time.Duration { return 2 * d.cfg.RetryInterval }
