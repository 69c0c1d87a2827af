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

// status is GET /status: this replica's view, and who holds the lock and
// the fleet-wide queue figures when Redis answers in time. The two reads
// run side by side, so a Redis that does not answer delays the answer by
// statusQueueTimeout once, not twice. With partitions it lists the
// partitions this replica leads; the holder of each is `lockworker
// partitions`'s to show.
func (d *Daemon) status(ctx context.Context) statusdoc.Status {
	rec := d.record()
	st := statusdoc.Status{
		WorkerID: d.cfg.WorkerID, State: rec.State, Leader: rec.Leader, Token: rec.Token,
		LockKey: d.be.Keys.Key(), Mode: string(d.be.Mode()), Partitions: d.be.Partitions,
		Nodes: len(d.be.Clients), RedisOK: d.redisOK(), Version: d.build.Short(),
	}
	if d.partitioned() {
		for _, l := range d.lanes {
			if s := l.leader.Status(); s.Leader {
				st.Leads = append(st.Leads, statusdoc.LeadStatus{Partition: l.n, Token: s.Token, LeaseLeftMs: s.LeaseLeft.Milliseconds()})
			}
		}
	} else {
		st.State = d.lanes[0].machine.State().String()
		st.LeaseLeft = d.lanes[0].leader.Status().LeaseLeft.Milliseconds()
	}
	st.Eviction = d.evictionStatus()
	st.Replicas = d.replicaStatus()
	holder := make(chan *statusdoc.Holder, 1)
	go func() { holder <- d.holder(ctx) }()
	q, err := d.stats(ctx)
	st.Holder = <-holder
	if err != nil {
		st.Queue = &statusdoc.Queue{Error: "unavailable"}
	} else {
		st.Queue = &statusdoc.Queue{Queue: q}
	}
	return st
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

// metricsSnapshot is the leadership for the metrics: without partitions
// the lock's; with them, whether this replica leads any, and which with
// which tokens (token and lease left are per partition there, and 0
// here).
func (d *Daemon) metricsSnapshot() metrics.Snapshot {
	if d.partitioned() {
		owned, _, _ := d.partitionsOf()
		return metrics.Snapshot{Leader: len(owned) > 0, Leads: owned}
	}
	s := d.lanes[0].leader.Status()
	return metrics.Snapshot{Leader: s.Leader, Token: s.Token, LeaseLeft: s.LeaseLeft}
}

// holder reads who holds the lock within statusQueueTimeout, for /status;
// nil with partitions.
func (d *Daemon) holder(ctx context.Context) *statusdoc.Holder {
	if d.partitioned() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	h, err := d.lanes[0].lock.Holder(ctx)
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
