package daemon

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// idlePoll is how often an idle leader looks at its queue when no enqueue
// notice comes (jittered to [idlePoll/2, idlePoll]); with several
// partitions, idlePollShared, since a replica leads many idle queues and
// the notices (and a re-subscription, which wakes every worker) are what
// wakes them.
const (
	idlePoll       = 2 * time.Second
	idlePollShared = 2 * time.Minute
)

// lane is one partition of this replica: its lock and queue, the worker
// that runs the queue's jobs, and the leadership (leader.Lane) that holds
// the lock's lease and runs the worker while it does. With one partition
// the one lane is the lock and the queue.
type lane struct {
	n      int
	lock   *redislock.Locker
	queue  *jobs.Queue
	worker *jobs.Worker
	leader *leader.Lane
	log    *slog.Logger
}

// newLane builds partition p's lane.
func (d *Daemon) newLane(p int) (*lane, error) {
	cfg := d.cfg
	l := &lane{n: p, lock: d.be.Lockers[p], queue: d.be.Queues.Queues()[p], log: d.log}
	poll := idlePoll
	if d.be.Partitions > 1 { // the lines of one lock need not say which
		l.log, poll = d.log.With("partition", p), idlePollShared
	}
	handler, err := jobHandler(cfg, l.log) // its lines carry the partition too
	if err != nil {
		return nil, err
	}
	h, work := withFaults(handler, func(ctx context.Context, lease leader.Lease) error {
		d.leadershipStarted(ctx, l, lease.Token())
		return l.worker.Process(ctx, lease)
	})
	onFailure, err := jobs.ParseFailurePolicy(cfg.JobOnFailure)
	if err != nil {
		return nil, err
	}
	l.worker, err = jobs.NewWorker(jobs.WorkerConfig{
		Queue: l.queue, Handler: h, Slots: d.slots, MaxAttempts: cfg.JobMaxAttempts, Batch: cfg.JobBatch,
		Retry:     backoff.Policy{Base: cfg.JobRetryBase, Max: cfg.JobRetryMax},
		OnFailure: onFailure,
		// The lane's reason says a paused queue (and its log line).
		OnPause: func(paused bool) { l.leader.QueuePaused(paused) },
		// Enqueue notices wake an idle leader at once; polling is only
		// the fallback for a lost notice.
		PollInterval: poll, Logger: l.log,
	})
	if err != nil {
		return nil, err
	}
	l.leader, err = leader.New(leader.Config{
		Partition: p, Lock: l.lock, Renewer: d.renewer, WorkerID: cfg.WorkerID, Work: work,
		RetryInterval: cfg.RetryInterval,
		// Stopping work and releasing each get at most half the shutdown
		// budget, so the release still has time.
		StopTimeout: cfg.ShutdownTimeout / 2,
		MayLead:     d.mayLead,
		Said:        d.replicas.said,
		Acquired:    func(err error) { d.replicas.note(p, err) },
		BeforeRelease: func(ctx context.Context, token int64, cause error) {
			d.beforeRelease(ctx, l, token, cause)
		},
		Changed: d.laneChanged,
		Transitioned: func(from, to machine.State, _ machine.Trigger) {
			d.metrics.Transition(from.String(), to.String())
		},
		Observer: d.metrics,
		Logger:   l.log,
	})
	return l, err
}

// errUnchecked refuses an acquire before the fleet's partition count was
// read: Redis has not answered yet.
var errUnchecked = errors.New("the partition count is not checked yet: Redis has not answered")

// mayLead is every lane's guard, asked before each acquire and as each
// leadership's work starts: no replica leads under a PARTITIONS the fleet
// does not use, nor on a Redis that evicts keys (or whose policy is not
// known yet).
func (d *Daemon) mayLead() error {
	select {
	case <-d.checked:
	default:
		return errUnchecked
	}
	return d.eviction.allow()
}

// guardsChanged tells every lane that mayLead's answer may have changed.
func (d *Daemon) guardsChanged() {
	for _, l := range d.lanes {
		l.leader.GuardsChanged()
	}
}

// laneReason is a lane's reason as /status and the page give it, to
// anyone who reaches the port: the error of a work that ended by its
// class only (it may quote what a job's handler wrote), secrets scrubbed.
func (d *Daemon) laneReason(r leader.Reason) string {
	if r.Kind == leader.WorkEnded {
		r.Err = jobs.ErrorClass(r.Err)
	}
	return d.cfg.Scrub(r.String())
}
