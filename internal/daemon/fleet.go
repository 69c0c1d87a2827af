package daemon

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/dashboard"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/roster"
)

// recentTransitions is how many of its own transitions a replica keeps
// for the dashboard's chart.
const recentTransitions = 10

// transitionLog keeps the latest transitions and since when the replica
// is in its current phase (see phase).
type transitionLog struct {
	mu     sync.Mutex
	recent []dashboard.Transition
	since  time.Time
}

// phase collapses the two loops of the chart, so a leader's renewals and
// a follower's retries do not reset since when it leads or follows.
func phase(s machine.State) machine.State {
	switch s {
	case machine.RenewLock:
		return machine.Working
	case machine.AcquiringLock:
		return machine.WaitingToAcquireLock
	}
	return s
}

func (l *transitionLog) add(from, to machine.State, trigger machine.Trigger, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent = append(l.recent, dashboard.Transition{From: from.String(), To: to.String(), Trigger: trigger.String(), At: at})
	if len(l.recent) > recentTransitions {
		l.recent = l.recent[len(l.recent)-recentTransitions:]
	}
	if phase(from) != phase(to) || l.since.IsZero() {
		l.since = at
	}
}

func (l *transitionLog) read() ([]dashboard.Transition, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]dashboard.Transition(nil), l.recent...), l.since
}

// onTransition is a lane's chart's hook: metrics, the log the page
// shows, the registry record, the coordinator, and the page itself,
// unless the step is a routine one of the chart's two loops (a leader
// renewing, a follower retrying), which changes nothing a page shows, so
// it does not make it read Redis.
func (d *Daemon) onTransition(l *lane, from, to machine.State, tr machine.Trigger) {
	d.metrics.Transition(from.String(), to.String())
	l.transitions.add(from, to, tr, time.Now())
	d.reporter.Poke()
	if d.coord != nil && phaseOf(from) != phaseOf(to) {
		d.coord.LaneChanged()
	}
	if !machine.Routine(from, tr) {
		d.changed()
	}
}

// record is this replica's registry record as it is now; nothing secret
// goes in (the last error is scrubbed of every configured secret). Its
// state is the phase (see phase): a record that said renew_lock or
// acquiring_lock would only flicker, one renewal or retry in a thousand.
// With partitions it says which partitions the replica leads, waits for
// and avoids; its state is then the most telling of its charts' (working
// when it leads any, waiting when it waits for any, else idle), and its
// token 0.
func (d *Daemon) record() roster.Record {
	rec := roster.Record{WorkerID: d.cfg.WorkerID, Host: d.host, PID: os.Getpid(), Version: d.build.Short(),
		PartitionCount: d.be.Partitions}
	var lastErr string
	var lastAt time.Time
	for _, l := range d.lanes {
		rec.JobsDone += l.worker.Committed()
		if msg, at := l.leader.LastError(); msg != "" && at.After(lastAt) {
			lastErr, lastAt = msg, at
		}
	}
	rec.LastError, rec.LastErrorClass = d.cfg.Scrub(lastErr), jobs.ErrorClass(lastErr)
	if !d.partitioned() {
		l := d.lanes[0]
		s := l.leader.Status()
		_, since := l.transitions.read()
		rec.State, rec.Leader, rec.Token, rec.Since = phase(l.machine.State()).String(), s.Leader, s.Token, since
		return rec
	}
	rec.Partitions, rec.Contending, rec.Avoiding = d.partitionsOf()
	rec.Leader = len(rec.Partitions) > 0
	state := machine.Idle
	for _, l := range d.lanes {
		switch s := phase(l.machine.State()); {
		case s == machine.Working:
			state = s
		case s == machine.WaitingToAcquireLock && state != machine.Working:
			state = s
		}
		if _, since := l.transitions.read(); since.After(rec.Since) {
			rec.Since = since
		}
	}
	rec.State = state.String()
	return rec
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
// request names the leadership's token. Followers read nothing. A
// partition stepped down from is left to the others for the hold.
func (d *Daemon) watchControl(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.control:
		}
		for _, l := range d.lanes {
			s := l.leader.Status()
			if !s.Leader {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
			token, err := d.operator.Requested(rctx, l.n)
			cancel()
			if err != nil {
				l.log.Warn("could not read the step-down request", "err", err)
				continue
			}
			if token != s.Token {
				continue
			}
			if d.partitioned() {
				l.avoidUntil.Store(time.Now().Add(d.stepDownHold()).UnixNano())
				d.reporter.Poke()
			}
			l.leader.StepDown(token)
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
