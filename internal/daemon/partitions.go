package daemon

import (
	"context"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/roster"
)

// maxMoves bounds a replica's handovers in flight: a join or a rolling
// restart moves partitions a few at a time, each in milliseconds, never
// stopping the work of many at once.
const maxMoves = 4

// assemblePartitions builds the coordinator, which reads the registry
// (every half refresh period, and at once on a fleet or release notice)
// and tells each lane whether to contend: its share of the partitions,
// or all of them when the fleet has more replicas than partitions (one
// partition: every replica contends, as a lock's followers do).
func (d *Daemon) assemblePartitions() error {
	every := backend.RegistryInterval(d.cfg)
	lanes := make([]partition.Lane, len(d.lanes))
	for i, l := range d.lanes {
		lanes[i] = laneView{l.leader}
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
	return err
}

// members reads the fleet's live members from the registry, and tells
// the lanes of the tokens the records name (each acquire's floor).
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

// laneView is a lane as the coordinator drives it.
type laneView struct{ l *leader.Lane }

var _ partition.Lane = laneView{}

func (v laneView) Phase() partition.Phase { return phaseOf(v.l.Snapshot()) }
func (v laneView) Token() int64           { return v.l.Snapshot().Token }
func (v laneView) Avoiding() bool         { return v.l.Snapshot().Avoiding() }
func (v laneView) Contend()               { v.l.Contend(true) }
func (v laneView) Leave()                 { v.l.Contend(false) }

// phaseOf is where a lane stands for the coordinator.
func phaseOf(s *leader.Snapshot) partition.Phase {
	switch s.State {
	case machine.AcquiringLock, machine.WaitingToAcquireLock:
		return partition.Contending
	case machine.Working, machine.RenewLock:
		return partition.Owning
	case machine.PauseWork, machine.Cleanup, machine.ReleasingLock:
		return partition.Leaving
	}
	return partition.Idle
}

// leadsOf is what the record says of the lanes: the partitions the
// replica leads (with tokens), waits for, and avoids.
func leadsOf(snaps []*leader.Snapshot) (owned []roster.Owned, contending, avoiding []int) {
	for _, s := range snaps {
		switch phaseOf(s) {
		case partition.Owning:
			if s.Leads() {
				owned = append(owned, roster.Owned{Partition: s.Partition, Token: s.Token})
			}
		case partition.Contending:
			contending = append(contending, s.Partition)
		}
		if s.Avoiding() {
			avoiding = append(avoiding, s.Partition)
		}
	}
	return owned, contending, avoiding
}

// snapshots are the lanes' latest snapshots, by partition.
func (d *Daemon) snapshots() []*leader.Snapshot {
	out := make([]*leader.Snapshot, len(d.lanes))
	for i, l := range d.lanes {
		out[i] = l.leader.Snapshot()
	}
	return out
}
