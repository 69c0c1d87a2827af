package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/metrics"
)

// statusQueueTimeout bounds the lock and queue reads behind /status and
// /metrics, so a Redis that is down or slow never makes them (and the
// probes and scrapes built on them) hang.
const statusQueueTimeout = 250 * time.Millisecond

func (d *Daemon) newServer() error {
	h, err := httpapi.New(httpapi.Config{
		Status:        d.status,
		Ready:         func() bool { return !d.stopping.Load() && d.leader.RedisOK() },
		Metrics:       d.metrics.Handler(),
		Enqueue:       d.be.Queue.Enqueue,
		EnqueueMany:   d.enqueueMany,
		JobsToken:     d.cfg.JobsToken,
		MaxJobBytes:   jobs.MaxPayload,
		MaxBatchJobs:  jobs.MaxBatch,
		MaxBatchBytes: jobs.MaxBatchBytes,
		Dashboard:     d.dash.Handler(),
		Logger:        d.log,
	})
	if err != nil {
		return err
	}
	d.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	return nil
}

// status is GET /status: this replica's view, and who holds the lock and
// the fleet-wide queue figures when Redis answers in time. The two reads
// run side by side, so a Redis that does not answer delays the answer by
// statusQueueTimeout once, not twice.
func (d *Daemon) status(ctx context.Context) httpapi.Status {
	s := d.leader.Status()
	st := httpapi.Status{
		WorkerID: d.cfg.WorkerID, State: d.machine.State().String(), Leader: s.Leader, Token: s.Token,
		LockKey: d.be.Keys.Key(), LeaseLeft: s.LeaseLeft.Milliseconds(), Mode: string(d.be.Mode()),
		Nodes: len(d.be.Clients), RedisOK: d.leader.RedisOK(), Version: d.build.Short(),
	}
	holder := make(chan *httpapi.Holder, 1)
	go func() { holder <- d.holder(ctx) }()
	q, err := d.stats(ctx)
	st.Holder = <-holder
	if err != nil {
		st.Queue = &httpapi.Queue{Error: "unavailable"}
	} else {
		st.Queue = &httpapi.Queue{Queue: q}
	}
	return st
}

func (d *Daemon) metricsSnapshot() metrics.Snapshot {
	s := d.leader.Status()
	return metrics.Snapshot{Leader: s.Leader, Token: s.Token, LeaseLeft: s.LeaseLeft}
}

// holder reads who holds the lock within statusQueueTimeout, for /status.
func (d *Daemon) holder(ctx context.Context) *httpapi.Holder {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	h, err := d.be.Locker.Holder(ctx)
	if err != nil {
		return &httpapi.Holder{Error: "unavailable"}
	}
	return &httpapi.Holder{Held: h.Held, WorkerID: h.WorkerID, Token: h.Token, LeaseLeftMs: h.TTL.Milliseconds()}
}

// stats reads the queue's figures within statusQueueTimeout, for /status
// and the metrics.
func (d *Daemon) stats(ctx context.Context) (figures.Queue, error) {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	return d.be.Queue.Stats(ctx)
}

// enqueueMany is POST /jobs with an NDJSON body.
func (d *Daemon) enqueueMany(ctx context.Context, keys []string, payloads [][]byte) ([]string, error) {
	items := make([]jobs.Item, len(payloads))
	for i, p := range payloads {
		items[i] = jobs.Item{Key: keys[i], Payload: p}
	}
	return d.be.Queue.EnqueueMany(ctx, items)
}
