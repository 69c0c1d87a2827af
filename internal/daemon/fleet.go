package daemon

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/roster"
)

// laneChanged is every lane's Changed hook: what a lane shows changed
// (its phase, its reason, its token, its hold), so the registry record,
// the coordinator (when its phase changed) and the page follow. A
// routine step of the chart's two loops (a leader renewing, a follower
// retrying) changes none of it, so it makes no page read Redis.
func (d *Daemon) laneChanged(prev, next *leader.Snapshot) {
	d.reporter.Poke()
	if phaseOf(prev) != phaseOf(next) {
		d.coord.LaneChanged()
	}
	d.changed()
}

// record is this replica's registry record as it is now; nothing secret
// goes in (the last error is scrubbed of every configured secret). It
// says which partitions the replica leads, waits for and avoids. Its
// state is the most telling of its lanes' phases (machine.State.Steady:
// a record that said renew_lock or acquiring_lock would only flicker,
// one renewal or retry in a thousand): working when it leads any,
// waiting when it waits for any. With one partition it also names its
// token, as the lock's record always did.
func (d *Daemon) record() roster.Record { return d.recordOf(d.snapshots()) }

// recordOf is the record the lanes' snapshots make.
func (d *Daemon) recordOf(snaps []*leader.Snapshot) roster.Record {
	rec := roster.Record{WorkerID: d.cfg.WorkerID, Host: d.host, PID: os.Getpid(), Version: d.build.Short(),
		PartitionCount: d.be.Partitions}
	var lastErr string
	var lastAt time.Time
	for i, s := range snaps {
		rec.JobsDone += d.lanes[i].worker.Committed()
		if s.LastError != "" && s.LastErrorAt.After(lastAt) {
			lastErr, lastAt = s.LastError, s.LastErrorAt
		}
	}
	rec.LastError, rec.LastErrorClass = d.cfg.Scrub(lastErr), jobs.ErrorClass(lastErr)
	rec.Partitions, rec.Contending, rec.Avoiding = leadsOf(snaps)
	rec.Leader = len(rec.Partitions) > 0
	if _, one := d.lock(); one && rec.Leader {
		rec.Token = rec.Partitions[0].Token
	}
	state, since := steadiest(snaps)
	rec.State, rec.Since = state.String(), since
	return rec
}

// steadiest is the most telling of the lanes' phases (working, then
// waiting_to_acquire_lock, then a way out, then idle) and the latest
// time a lane entered its phase.
func steadiest(snaps []*leader.Snapshot) (machine.State, time.Time) {
	rank := func(s machine.State) int {
		switch s {
		case machine.Working:
			return 3
		case machine.WaitingToAcquireLock:
			return 2
		case machine.Idle:
			return 0
		}
		return 1
	}
	state, since := machine.Idle, time.Time{}
	for i, s := range snaps {
		if st := s.State.Steady(); i == 0 || rank(st) > rank(state) {
			state = st
		}
		if s.Since.After(since) {
			since = s.Since
		}
	}
	return state, since
}

// leadershipStarted runs as each leadership's work begins: it is counted,
// appended to the history (how the previous one of its partition ended
// comes back with it) and, after a release, its handover time observed.
// A Redis error is logged; the leadership goes on.
func (d *Daemon) leadershipStarted(ctx context.Context, l *lane, token int64) {
	d.metrics.LeaderChange()
	hctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
	defer cancel()
	e, dup, err := d.history.Started(hctx, l.n, token, d.cfg.WorkerID)
	if err != nil {
		l.log.Warn("could not add this leadership to the history", "token", token, "err", err)
		return
	}
	switch {
	case dup:
	case e.PreviousEnded == history.Released, e.PreviousEnded == history.SteppedDown, e.PreviousEnded == history.Fenced:
		d.metrics.ObserveHandover(e.Handover)
	}
	l.log.Info("leadership recorded", "token", token, "previousEnded", string(e.PreviousEnded),
		"handoverMs", e.Handover.Milliseconds())
	d.changed()
}

// beforeRelease records how a valid leadership of lane l ends, just
// before its lock is released: the next leader reads it.
func (d *Daemon) beforeRelease(ctx context.Context, l *lane, token int64, cause error) {
	reason := history.Released
	switch {
	case errors.Is(cause, leader.ErrSteppedDown):
		reason = history.SteppedDown
	case errors.Is(cause, jobs.ErrStaleToken):
		reason = history.Fenced
	}
	hctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
	defer cancel()
	if err := d.history.Ended(hctx, l.n, token, d.cfg.WorkerID, reason); err != nil {
		l.log.Warn("could not record how this leadership ended", "token", token, "reason", string(reason), "err", err)
	}
}

// onControl is the control channel's handler (an operator asked for
// something): it wakes the step-down check, the idle job loops (pause and
// resume), and the page. It never blocks.
func (d *Daemon) onControl() {
	select {
	case d.control <- struct{}{}:
	default:
	}
	for _, l := range d.lanes {
		l.worker.Notify()
	}
	d.changed()
}

// watchControl reads the step-down requests of the partitions this
// replica leads after each control notice, and steps down where a
// request names the leadership's token. Followers read nothing. A lane
// that steps down leaves its partition to the others for the hold.
func (d *Daemon) watchControl(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.control:
		}
		for _, l := range d.lanes {
			s := l.leader.Snapshot()
			if !s.Leads() {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
			token, err := d.operator.Requested(rctx, l.n)
			cancel()
			if err != nil {
				l.log.Warn("could not read the step-down request", "err", err)
				continue
			}
			if token == s.Token {
				l.leader.StepDown(token)
			}
		}
	}
}

// changed tells the dashboard something it shows may have changed. It
// never blocks; notices coalesce.
func (d *Daemon) changed() {
	select {
	case d.changes <- struct{}{}:
	default:
	}
}
