package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// idlePoll is how often an idle leader looks at its queue when no enqueue
// notice comes (jittered to [idlePoll/2, idlePoll]); with partitions,
// partitionIdlePoll, since a replica leads many idle queues and the
// notices (and a re-subscription, which wakes every worker) are what
// wakes them.
const (
	idlePoll          = 2 * time.Second
	partitionIdlePoll = 2 * time.Minute
)

// lane is one partition of this replica: its lock and queue, the worker
// that runs the queue's jobs, the leader that holds the lock's lease and
// the chart that drives the leader. Without partitions the one lane is
// the lock and the queue.
type lane struct {
	n           int
	lock        *redislock.Locker
	queue       *jobs.Queue
	worker      *jobs.Worker
	leader      *leader.Leader
	machine     *machine.Machine
	log         *slog.Logger
	transitions transitionLog
	// avoidUntil (unix ns): this replica stepped down from the partition
	// on an operator's request and leaves it to the others until then.
	avoidUntil atomic.Int64
}

// newLane builds partition p's lane around handler, which every lane
// shares.
func (d *Daemon) newLane(p int, handler jobs.Handler) (*lane, error) {
	cfg := d.cfg
	l := &lane{n: p, lock: d.be.Lockers[p], queue: d.be.Queues.Queues()[p], log: d.log}
	if d.partitioned() {
		l.log = d.log.With("partition", p)
	}
	l.transitions.since = time.Now() // in idle since now
	h, work := withFaults(handler, func(ctx context.Context, lease leader.Lease) error {
		d.leadershipStarted(ctx, l, lease.Token())
		return d.eviction.guard(ctx, func(ctx context.Context) error { return l.worker.Process(ctx, lease) })
	})
	poll := idlePoll
	if d.partitioned() {
		poll = partitionIdlePoll
	}
	onFailure, err := jobs.ParseFailurePolicy(cfg.JobOnFailure)
	if err != nil {
		return nil, err
	}
	l.worker, err = jobs.NewWorker(jobs.WorkerConfig{
		Queue: l.queue, Handler: h, Slots: d.slots, MaxAttempts: cfg.JobMaxAttempts, Batch: cfg.JobBatch,
		Retry:     backoff.Policy{Base: cfg.JobRetryBase, Max: cfg.JobRetryMax},
		OnFailure: onFailure,
		// Enqueue notices wake an idle leader at once; polling is only
		// the fallback for a lost notice.
		PollInterval: poll, Logger: l.log,
	})
	if err != nil {
		return nil, err
	}
	var lock leader.Lock = l.lock
	if d.beat != nil {
		lock = d.beat.lock(p, l.lock)
	}
	lock = gatedLock{Lock: lock, open: d.checked, allow: d.eviction.allow,
		acquired: func(err error) { d.replicas.note(p, err) }}
	l.leader, err = leader.New(leader.Config{
		Lock: lock, WorkerID: cfg.WorkerID, RetryInterval: cfg.RetryInterval,
		Work:     work,
		Logger:   l.log,
		Observer: d.metrics,
		BeforeRelease: func(ctx context.Context, token int64, cause error) {
			d.beforeRelease(ctx, l, token, cause)
		},
	})
	if err != nil {
		return nil, err
	}
	l.machine, err = d.newMachine(l)
	return l, err
}

// newMachine wires lane l's chart to its leader. Stopping work and
// releasing each get at most half the shutdown budget, so the release
// still has time. With partitions the chart is Resident: the coordinator
// tells it when to contend and when to leave.
func (d *Daemon) newMachine(l *lane) (*machine.Machine, error) {
	half := d.cfg.ShutdownTimeout / 2
	return machine.New(machine.Config{
		Acquire: l.leader.Acquire,
		Renew:   l.leader.Renew,
		Release: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, half)
			defer cancel()
			return l.leader.Release(ctx)
		},
		StartWork: l.leader.StartWork,
		StopWork: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, half)
			defer cancel()
			return l.leader.StopWork(ctx)
		},
		RenewInterval: d.cfg.RenewInterval,
		RetryDelay:    l.leader.RetryDelay,
		Held:          func(err error) bool { return leader.HeldByAnother(err) || d.replicas.said(err) },
		Logger:        l.log,
		OnTransition:  func(from, to machine.State, tr machine.Trigger) { d.onTransition(l, from, to, tr) },
		Resident:      d.partitioned(),
	})
}

// avoiding reports that this replica stepped down from the lane's
// partition and leaves it to the others for now.
func (l *lane) avoiding() bool { return time.Now().UnixNano() < l.avoidUntil.Load() }

// notifyReleased wakes the lane's waiting chart, unless it is backing off
// after its own leadership failed (its own release's notice among those).
func (l *lane) notifyReleased() {
	if l.leader.WantsNotice() {
		l.machine.NotifyReleased()
	}
}

// errUnchecked is an acquire refused before the fleet's partition count
// was read: Redis has not answered yet.
var errUnchecked = errors.New("daemon: the partition count is not checked yet: Redis has not answered")

// gatedLock refuses to acquire until open is closed (the partition count
// checked), so no replica leads under a PARTITIONS the fleet does not use,
// and while allow says no (a Redis master evicts keys, or its policy is
// not known yet: evictionGuard).
type gatedLock struct {
	leader.Lock
	open     <-chan struct{}
	allow    func() error
	acquired func(err error) // the result of every acquire sent to Redis
}

func (g gatedLock) Acquire(ctx context.Context, workerID string, floor int64) (*redislock.Lease, error) {
	select {
	case <-g.open:
	default:
		return nil, errUnchecked
	}
	if err := g.allow(); err != nil {
		return nil, err
	}
	lease, err := g.Lock.Acquire(ctx, workerID, floor)
	g.acquired(err)
	return lease, err
}
