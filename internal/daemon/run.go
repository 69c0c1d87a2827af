package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

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
		"redis", d.cfg.RedisURLsRedacted(), "lockTtl", d.cfg.LockTTL.String(),
		"renewInterval", d.cfg.RenewInterval.String(), "retryInterval", d.cfg.RetryInterval.String())
	if err := d.be.Probe(ctx, probeTimeout); err != nil {
		return err
	}

	// aux carries everything but the machine: it ends when the machine
	// does, or when the shutdown budget runs out.
	aux, stopAux := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAux()
	g, gctx := errgroup.WithContext(aux)
	machineDone := make(chan struct{})
	g.Go(func() error {
		defer close(machineDone)
		defer stopAux() // the machine is the daemon: when it ends, everything ends
		return d.machine.Run(ctx)
	})
	g.Go(func() error {
		<-gctx.Done() // the machine ended, or another part failed: stop the machine too
		d.machine.Stop()
		return nil
	})
	g.Go(func() error { return d.serve(gctx) })
	g.Go(func() error { return d.reporter.Run(gctx) })
	g.Go(func() error { return d.watchControl(gctx) })
	g.Go(func() error { return d.dash.Run(gctx) })
	d.watchNotices(gctx, g)

	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }() // owned below: read on every path but the bounded give-up
	if err := d.awaitMachine(ctx, machineDone); err != nil {
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

// awaitMachine waits for the machine to end. A signal (ctx done) starts
// the clock on SHUTDOWN_TIMEOUT.
func (d *Daemon) awaitMachine(ctx context.Context, machineDone <-chan struct{}) error {
	select {
	case <-machineDone:
		return nil
	case <-ctx.Done():
	}
	d.stopping.Store(true)
	d.log.Info("signal received: stopping", "shutdownTimeout", d.cfg.ShutdownTimeout.String())
	t := time.NewTimer(d.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-machineDone:
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
// wake a waiting follower; on the first node (the queue's), enqueue
// notices wake an idle leader, control notices (an operator's step-down,
// pause, resume) are acted on, and registry changes refresh the page.
func (d *Daemon) watchNotices(ctx context.Context, g *errgroup.Group) {
	for i, src := range d.be.Sources() {
		handlers := map[string]func(){}
		if d.cfg.ReleaseNotices {
			handlers[d.be.Keys.Lease().ReleasedChannel()] = d.notifyReleased
		}
		if i == 0 {
			handlers[d.be.Queue.EnqueuedChannel()] = func() { d.worker.Notify(); d.changed() }
			handlers[d.be.Keys.ControlChannel()] = d.onControl
			handlers[d.be.Keys.FleetChannel()] = d.changed
		}
		g.Go(func() error {
			notice.Watch(ctx, src, handlers, d.log)
			return nil
		})
	}
}

// notifyReleased wakes a waiting follower, unless it is backing off after
// its own leadership failed (its own release's notice among those).
func (d *Daemon) notifyReleased() {
	if d.leader.WantsNotice() {
		d.machine.NotifyReleased()
	}
}
