package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/notice"
)

// shutdownGrace is how long Run still waits for its goroutines after
// SHUTDOWN_TIMEOUT ran out, before it returns anyway.
const shutdownGrace = time.Second

// probeTimeout bounds the start-up check of the Redis nodes.
const probeTimeout = 2 * time.Second

// Run runs the replica until ctx is cancelled (SIGTERM/SIGINT), then stops
// work, releases the lock and returns within SHUTDOWN_TIMEOUT (plus
// shutdownGrace when that runs out). A Redis node that refuses this
// replica for good (wrong password, no such database, TLS that cannot
// work) makes it return a configuration error at once; one that is merely
// unreachable is retried. Call it once.
func (d *Daemon) Run(ctx context.Context) error {
	defer func() { _ = d.be.Close() }()
	d.log.Info("lockworker starting", "port", d.cfg.Port, "lockKey", d.be.Keys.Key(), "mode", d.be.Mode(), "topology", d.be.Topology(),
		"partitions", d.be.Partitions, "redis", d.cfg.RedisURLsRedacted(), "lockTtl", d.cfg.LockTTL.String(),
		"renewInterval", d.cfg.RenewInterval.String(), "retryInterval", d.cfg.RetryInterval.String())
	if err := d.be.Probe(ctx, probeTimeout); err != nil {
		return err
	}
	checked, err := d.checkPartitionsOnce(ctx)
	if err != nil {
		return err
	}
	if err := d.eviction.check(ctx); err != nil {
		return err // a master evicts keys: exit 2, naming it, its policy and the fix
	}

	// aux carries everything but the lanes: it ends when they do, or
	// when the shutdown budget runs out.
	aux, stopAux := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAux()
	g, gctx := errgroup.WithContext(aux)
	// The lanes stop on a signal, once this replica's record is gone, so
	// the others contend for its partitions before it releases them (see
	// leave).
	lanes, stopLanes := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLanes()
	g.Go(func() error { d.leave(ctx, gctx, stopLanes); return nil })
	g.Go(func() error { return d.coord.Run(lanes) })
	g.Go(func() error { return d.renewer.Run(gctx) })
	lanesDone := make(chan struct{})
	g.Go(func() error {
		defer close(lanesDone)
		defer stopAux() // the lanes are the daemon: when they end, everything ends
		return d.runLanes(lanes)
	})
	g.Go(func() error {
		<-gctx.Done() // the lanes ended, or another part failed: stop the lanes too
		for _, l := range d.lanes {
			l.leader.Stop()
		}
		return nil
	})
	if !checked {
		g.Go(func() error { return d.checkPartitions(gctx) })
	}
	g.Go(func() error { return d.serve(gctx) })
	g.Go(func() error { return d.eviction.Run(gctx) })
	g.Go(func() error { return d.observeTokens(gctx, evictionCheckInterval(d.cfg)) })
	g.Go(func() error { return d.report(gctx) })
	g.Go(func() error { return d.defendPartitions(gctx) })
	g.Go(func() error { return d.watchControl(gctx) })
	g.Go(func() error { return d.dash.Run(gctx) })
	d.watchNotices(gctx, g)

	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }() // owned below: read on every path but the bounded give-up
	if err := d.awaitLanes(ctx, lanesDone); err != nil {
		stopAux()
		select {
		case <-waited:
		case <-time.After(shutdownGrace):
			d.log.Error("goroutines still running after the shutdown budget; exiting anyway")
		}
		return err
	}
	if err := <-waited; err != nil {
		return err
	}
	d.log.Info("lockworker stopped")
	return nil
}

// runLanes runs every lane until each has returned.
func (d *Daemon) runLanes(ctx context.Context) error {
	var g errgroup.Group
	for _, l := range d.lanes {
		g.Go(func() error { return l.leader.Run(ctx) })
	}
	return g.Wait()
}

// leave is the replica's way out: once a signal comes (ctx) it removes
// its registry record and announces it, so the others contend for its
// partitions at once, then stops its lanes (stopLanes), which stop their
// work and release their locks with the notices. A failure of another
// part (aux done) stops the lanes at once.
func (d *Daemon) leave(ctx, aux context.Context, stopLanes context.CancelFunc) {
	defer stopLanes()
	select {
	case <-ctx.Done():
	case <-aux.Done():
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.RedisNodeTimeout)
	defer cancel()
	d.reporter.Leave(rctx)
}

// checkPartitionsOnce refuses a PARTITIONS that is not the fleet's, and
// a WORKER_ID a live replica holds (a *config.Error: exit 2), and opens
// the lanes' gate (d.checked) when the count is the fleet's and the name
// this replica's; checked false means Redis did not answer, and
// checkPartitions asks again.
func (d *Daemon) checkPartitionsOnce(ctx context.Context) (checked bool, err error) {
	err = d.be.CheckPartitions(ctx, d.cfg.RedisNodeTimeout, d.waitingForFleet)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, d.cfg.RedisNodeTimeout)
		err = d.claimWorkerID(cctx)
		cancel()
	}
	var ce *config.Error
	switch {
	case err == nil:
		close(d.checked)
		return true, nil
	case errors.As(err, &ce):
		return false, err
	}
	d.log.Debug("could not check the partition count yet; retrying", "err", err)
	return false, nil
}

// checkPartitions asks until Redis answers (with back-off), then opens
// the lanes' gate (a lane refused by it tries at once), or ends Run with
// the refusal of another count. Until then no lane acquires (mayLead): no
// replica leads under a PARTITIONS the fleet does not use.
func (d *Daemon) checkPartitions(ctx context.Context) error {
	for try := 1; backoff.Sleep(ctx, probeRetry.Delay(try)); try++ {
		switch checked, err := d.checkPartitionsOnce(ctx); {
		case err != nil:
			return err
		case checked:
			d.guardsChanged()
			return nil
		}
	}
	return nil
}

// probeRetry spaces the attempts to read the partition count.
var probeRetry = backoff.Policy{Base: 100 * time.Millisecond, Max: time.Second}

// awaitLanes waits for the lanes to end. A signal (ctx done) starts the
// clock on SHUTDOWN_TIMEOUT.
func (d *Daemon) awaitLanes(ctx context.Context, lanesDone <-chan struct{}) error {
	select {
	case <-lanesDone:
		return nil
	case <-ctx.Done():
	}
	d.stopping.Store(true)
	d.log.Info("signal received: stopping", "shutdownTimeout", d.cfg.ShutdownTimeout.String())
	t := time.NewTimer(d.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-lanesDone:
		return nil
	case <-t.C:
		return fmt.Errorf("shutdown took longer than SHUTDOWN_TIMEOUT (%s)", d.cfg.ShutdownTimeout)
	}
}

// serve answers HTTP until ctx ends, then shuts the server down.
func (d *Daemon) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- d.srv.Serve(d.ln) }()
	select {
	case err := <-errc:
		return err // the listener failed; Serve never returns nil
	case <-ctx.Done():
	}
	d.stopping.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := d.srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// watchNotices subscribes once per node: release notices from every node
// wake the lane that waits for that lock, and the coordinator (the
// releaser's record changes next); on the first node (the queue's),
// enqueue notices wake an idle leader, control notices (an operator's
// step-down, pause, resume) are acted on, and registry changes refresh
// the page and the coordinator's view. With partitions on a Cluster, the
// partitions' notices come over a subscription of their own
// (backend.LaneSources).
func (d *Daemon) watchNotices(ctx context.Context, g *errgroup.Group) {
	fleet, lanes := d.be.Sources(), d.be.LaneSources()
	for i := range fleet {
		byLane := map[string]func(){}
		for _, l := range d.lanes {
			keys := d.be.Keys.Partition(l.n, d.be.Partitions)
			if d.cfg.ReleaseNotices {
				byLane[keys.ReleasedChannel()] = func() {
					l.leader.NotifyReleased()
					d.coord.MembersChanged()
				}
			}
			if i == 0 {
				byLane[keys.EnqueuedChannel()] = func() { l.worker.Notify(); d.changed() }
			}
		}
		byFleet := map[string]func(){}
		if i == 0 {
			byFleet[d.be.Keys.ControlChannel()] = d.onControl
			byFleet[d.be.Keys.FleetChannel()] = func() {
				d.changed()
				d.coord.MembersChanged()
			}
		}
		if !d.be.LaneNoticesApart() {
			maps.Copy(byFleet, byLane)
			byLane = nil
		}
		for _, w := range []struct {
			src      notice.Source
			handlers map[string]func()
		}{{fleet[i], byFleet}, {lanes[i], byLane}} {
			if len(w.handlers) > 0 {
				g.Go(func() error {
					notice.Watch(ctx, w.src, w.handlers, d.log)
					return nil
				})
			}
		}
	}
}
