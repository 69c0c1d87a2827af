package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/metrics"
	"github.com/lockworker/lockworker/internal/statusdoc"
)

// statusQueueTimeout bounds the lock and queue reads behind /status and
// /metrics, so a Redis that is down or slow never makes them (and the
// probes and scrapes built on them) hang.
const statusQueueTimeout = 250 * time.Millisecond

func (d *Daemon) newServer() error {
	h, err := httpapi.New(httpapi.Config{
		Status:          d.status,
		Ready:           d.ready,
		Metrics:         d.metrics.Handler(),
		Enqueue:         d.be.Queues.EnqueueItem,
		EnqueueMany:     d.be.Queues.EnqueueItems,
		AdminToken:      d.cfg.AdminToken,
		Schedules:       d.be.Queues,
		JobsToken:       d.cfg.JobsToken,
		MaxBodyInFlight: d.cfg.HTTPMaxBodyBytes,
		Dashboard:       d.dash.Handler(),
		Logger:          d.log,
	})
	if err != nil {
		return err
	}
	d.srv = &http.Server{
		Handler:  h,
		ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	if d.conns, err = httpapi.NewConnLimiter(httpapi.ConnLimits{MaxConns: d.maxConns()}); err != nil {
		return err
	}
	d.conns.Configure(d.srv)
	return nil
}

// maxConns is HTTP_MAX_CONNS, lowered when its connections and those
// still sending their headers (httpapi.PendingPerConn each) would take
// more than half the descriptor limit: the other half is for Redis and
// the jobs' pipes and processes.
func (d *Daemon) maxConns() int {
	n := d.cfg.HTTPMaxConns
	if limit := nofileLimit(); limit > 0 {
		if fit := httpapi.ConnsWithin(limit/2, n); fit < n {
			n = fit
			d.log.Info("HTTP_MAX_CONNS lowered: its connections and those still sending headers must fit in half the descriptor limit",
				"httpMaxConns", d.cfg.HTTPMaxConns, "nofile", limit, "effective", n, "pending", n*httpapi.PendingPerConn)
		}
	}
	return n
}

// status is GET /status: this replica's view, and who holds the lock,
// the fleet-wide queue figures and the schedules (each one's last and
// next tick) when Redis answers in time. The reads run side by side, so
// a Redis that does not answer delays the answer by statusQueueTimeout
// once, not three times. It lists every lane with its state
// and why it does not lead; with several partitions, also the partitions
// this replica leads (the holder of each is `lockworker partitions`'s to
// show).
func (d *Daemon) status(ctx context.Context) statusdoc.Status {
	snaps := d.snapshots() // one reading serves every field
	rec := d.recordOf(snaps)
	st := statusdoc.Status{
		WorkerID: d.cfg.WorkerID, State: rec.State, Leader: rec.Leader, Token: rec.Token,
		LockKey: d.be.Keys.Key(), Mode: string(d.be.Mode()), Partitions: d.be.Partitions,
		Nodes: len(d.be.Clients), RedisOK: d.redisOK(), Version: d.build.Short(),
		JobSlots: statusdoc.JobSlots{Size: d.slots.Size(), InUse: d.slots.InUse()},
	}
	for _, s := range snaps {
		st.Lanes = append(st.Lanes, statusdoc.LaneStatus{Partition: s.Partition, State: s.State.String(), Token: s.Token,
			LeaseLeftMs: s.LeaseLeft().Milliseconds(), Reason: d.laneReason(s.Reason)})
	}
	if _, one := d.lock(); one {
		st.State, st.LeaseLeft = snaps[0].State.String(), snaps[0].LeaseLeft().Milliseconds()
	} else {
		for _, o := range rec.Partitions {
			st.Leads = append(st.Leads, statusdoc.LeadStatus{Partition: o.Partition, Token: o.Token,
				LeaseLeftMs: st.Lanes[o.Partition].LeaseLeftMs})
		}
	}
	st.Eviction = d.evictionStatus()
	st.Replicas = d.replicaStatus()
	holder := make(chan *statusdoc.Holder, 1)
	go func() { holder <- d.holder(ctx) }()
	type scheduleRead struct {
		list []figures.Schedule
		err  error
	}
	schedules := make(chan scheduleRead, 1)
	go func() {
		list, err := d.schedules(ctx)
		schedules <- scheduleRead{list, err}
	}()
	q, err := d.stats(ctx)
	st.Holder = <-holder
	if err != nil {
		st.Queue = &statusdoc.Queue{Error: "unavailable"}
	} else {
		st.Queue = &statusdoc.Queue{Queue: q}
	}
	sr := <-schedules
	st.Schedules = sr.list
	if sr.err != nil {
		st.SchedulesError = "unavailable"
	}
	if st.Schedules == nil {
		st.Schedules = []figures.Schedule{}
	}
	return st
}

// schedules reads the fleet's schedules within statusQueueTimeout, for
// /status and the metrics.
func (d *Daemon) schedules(ctx context.Context) ([]figures.Schedule, error) {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	return d.be.Queues.Schedules(ctx)
}

// ready is nil when this replica can take part in elections (/readyz),
// else why not.
func (d *Daemon) ready() error {
	if d.stopping.Load() {
		return errors.New("shutting down")
	}
	if err := d.replicas.err(); err != nil { // before redisOK: its acquires fail, with this as the reason
		return err
	}
	if err := d.eviction.allow(); err != nil {
		return err
	}
	if !d.redisOK() {
		return errors.New("no answer from Redis")
	}
	return nil
}

// replicaStatus is what /status says of masters short of replicas; nil
// when none is.
func (d *Daemon) replicaStatus() *statusdoc.ReplicaShortage {
	short := d.replicas.list()
	if len(short) == 0 {
		return nil
	}
	r := &statusdoc.ReplicaShortage{Reason: shortageErr(short).Error()}
	for _, e := range short {
		r.Masters = append(r.Masters, statusdoc.ReplicaMaster{Master: e.Master, OnlineReplicas: e.Online, MinReplicas: e.Min})
	}
	return r
}

// evictionStatus is what /status says of the masters' eviction policies.
func (d *Daemon) evictionStatus() *statusdoc.Eviction {
	e := &statusdoc.Eviction{Safe: true, Nodes: []statusdoc.EvictionNode{}}
	if err := d.eviction.allow(); err != nil {
		e.Safe, e.Reason = false, err.Error()
	}
	for _, p := range d.eviction.policies() {
		n := statusdoc.EvictionNode{Node: p.Node, Policy: p.Policy}
		if p.Err != nil {
			n.Error = p.Err.Error()
		}
		e.Nodes = append(e.Nodes, n)
	}
	return e
}

// metricsSnapshot is the leadership for the metrics: with one
// partition, the lock's; with several, whether this replica leads any,
// and which with which tokens (token and lease left are per partition
// there, and 0 here).
func (d *Daemon) metricsSnapshot() metrics.Snapshot {
	if l, one := d.lock(); one {
		s := l.leader.Snapshot()
		return metrics.Snapshot{Leader: s.Leads(), Token: s.Token, LeaseLeft: s.LeaseLeft()}
	}
	owned, _, _ := leadsOf(d.snapshots())
	return metrics.Snapshot{Leader: len(owned) > 0, Leads: owned}
}

// holder reads who holds the lock within statusQueueTimeout, for /status;
// nil with several partitions.
func (d *Daemon) holder(ctx context.Context) *statusdoc.Holder {
	l, one := d.lock()
	if !one {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	h, err := l.lock.Holder(ctx)
	if err != nil {
		return &statusdoc.Holder{Error: "unavailable"}
	}
	return &statusdoc.Holder{Held: h.Held, WorkerID: h.WorkerID, Token: h.Token, LeaseLeftMs: h.TTL.Milliseconds()}
}

// stats reads the queue's figures within statusQueueTimeout, for /status
// and the metrics: with partitions, all of them summed.
func (d *Daemon) stats(ctx context.Context) (figures.Queue, error) {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	return d.be.Queues.Stats(ctx)
}

// partitionStats reads every partition's queue figures within
// statusQueueTimeout, for the metrics.
func (d *Daemon) partitionStats(ctx context.Context) ([]figures.Queue, error) {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	return d.be.Queues.PartitionStats(ctx)
}
