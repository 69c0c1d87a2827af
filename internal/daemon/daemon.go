package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/buildinfo"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/dashboard"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/metrics"
	"github.com/lockworker/lockworker/internal/operator"
	"github.com/lockworker/lockworker/internal/roster"
)

// idlePoll is how often an idle leader looks at its queue when no enqueue
// notice comes (jittered to [idlePoll/2, idlePoll]).
const idlePoll = 2 * time.Second

// Daemon is one replica, assembled and ready to Run.
type Daemon struct {
	cfg      config.Config
	log      *slog.Logger
	be       *backend.Backend
	worker   *jobs.Worker
	metrics  *metrics.Metrics
	leader   *leader.Leader
	machine  *machine.Machine
	srv      *http.Server
	ln       net.Listener
	stopping atomic.Bool // set on a signal: /readyz answers 503

	// The fleet's shared view and the operator's side.
	roster      *roster.Roster
	reporter    *roster.Reporter
	history     *history.History
	operator    *operator.Operator
	dash        *dashboard.Dashboard
	build       buildinfo.Info
	host        string
	transitions transitionLog
	control     chan struct{} // a control notice: check for a step-down request
	changes     chan struct{} // the dashboard's Source.Changes
}

var _ leader.Observer = (*metrics.Metrics)(nil)

// New builds every part from cfg and listens on PORT; it starts nothing.
// log should already carry workerId. Configuration errors wrap
// config.ErrInvalid.
func New(cfg config.Config, log *slog.Logger) (*Daemon, error) {
	be, err := backend.Open(cfg)
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, log: log, be: be, build: buildinfo.Read(),
		control: make(chan struct{}, 1), changes: make(chan struct{}, 1)}
	d.host, _ = os.Hostname()
	d.transitions.since = time.Now() // in idle since now
	if err := d.assemble(); err != nil {
		_ = be.Close()
		return nil, err
	}
	d.ln, err = net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		_ = be.Close()
		return nil, fmt.Errorf("PORT %d: %w", cfg.Port, err)
	}
	return d, nil
}

// assemble builds the parts in dependency order, so no part is wired to
// another that does not exist yet.
func (d *Daemon) assemble() error {
	cfg := d.cfg
	handler, err := jobHandler(cfg, d.log)
	if err != nil {
		return err
	}
	handler, work := withFaults(handler, func(ctx context.Context, lease leader.Lease) error {
		d.leadershipStarted(ctx, lease.Token())
		return d.worker.Process(ctx, lease)
	})
	d.worker, err = jobs.NewWorker(jobs.WorkerConfig{
		Queue: d.be.Queue, Handler: handler, MaxAttempts: cfg.JobMaxAttempts, Batch: cfg.JobBatch,
		// Enqueue notices wake an idle leader at once; polling is only
		// the fallback for a lost notice.
		PollInterval: idlePoll, Logger: d.log,
	})
	if err != nil {
		return err
	}
	if d.metrics, err = metrics.New(metrics.Config{States: stateNames(), Version: d.build.Short(), GoVersion: d.build.Go}); err != nil {
		return err
	}
	d.leader, err = leader.New(leader.Config{
		Lock: d.be.Locker, WorkerID: cfg.WorkerID, RetryInterval: cfg.RetryInterval,
		Work:          work,
		Logger:        d.log,
		Observer:      d.metrics,
		BeforeRelease: d.beforeRelease,
	})
	if err != nil {
		return err
	}
	if err := d.metrics.Watch(metrics.Sources{Snapshot: d.metricsSnapshot, Queue: d.stats, RedisOK: d.leader.RedisOK}); err != nil {
		return err
	}
	if err := d.assembleFleet(); err != nil {
		return err
	}
	if d.machine, err = d.newMachine(); err != nil {
		return err
	}
	if err := d.newDashboard(); err != nil {
		return err
	}
	return d.newServer()
}

// assembleFleet builds the reporter that keeps this replica's registry
// record fresh; the registry, history and operator come with the backend.
func (d *Daemon) assembleFleet() error {
	d.roster, d.history, d.operator = d.be.Roster, d.be.History, d.be.Operator
	var err error
	d.reporter, err = roster.NewReporter(roster.ReporterConfig{
		Roster: d.roster, Read: d.record, Interval: backend.RegistryInterval(d.cfg), Logger: d.log,
	})
	return err
}

// newMachine wires the chart to the leader. Stopping work and releasing
// each get at most half the shutdown budget, so the release still has time.
func (d *Daemon) newMachine() (*machine.Machine, error) {
	half := d.cfg.ShutdownTimeout / 2
	return machine.New(machine.Config{
		Acquire: d.leader.Acquire,
		Renew:   d.leader.Renew,
		Release: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, half)
			defer cancel()
			return d.leader.Release(ctx)
		},
		StartWork: d.leader.StartWork,
		StopWork: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, half)
			defer cancel()
			return d.leader.StopWork(ctx)
		},
		RenewInterval: d.cfg.RenewInterval,
		RetryDelay:    d.leader.RetryDelay,
		Held:          leader.HeldByAnother,
		Logger:        d.log,
		OnTransition:  d.onTransition,
	})
}

// jobHandler is the handler JOB_HANDLER names.
func jobHandler(cfg config.Config, log *slog.Logger) (jobs.Handler, error) {
	switch cfg.JobHandler {
	case "exec":
		return jobs.NewExecHandler(jobs.ExecConfig{
			Command:  strings.Fields(cfg.JobCommand),
			Grace:    cfg.JobStopGrace,
			AllowEnv: cfg.JobEnv,
			WorkerID: cfg.WorkerID,
			Logger:   log,
		})
	case "http":
		return httpHandler(cfg, log)
	}
	return jobs.NewLogHandler(jobs.LogConfig{Duration: cfg.WorkDuration, Logger: log})
}

// httpHandler posts jobs to JOB_URL. Each request ends REDIS_NODE_TIMEOUT
// before the lease's local deadline at the latest: the time the step that
// records its outcome may take.
func httpHandler(cfg config.Config, log *slog.Logger) (jobs.Handler, error) {
	var pool *x509.CertPool
	if cfg.JobURLCA != "" {
		pem, err := os.ReadFile(cfg.JobURLCA)
		if err != nil {
			return nil, &config.Error{Var: "JOB_URL_CA", Msg: err.Error()}
		}
		if pool = x509.NewCertPool(); !pool.AppendCertsFromPEM(pem) {
			return nil, &config.Error{Var: "JOB_URL_CA", Msg: "no PEM certificate in the file"}
		}
	}
	h, err := jobs.NewHTTPHandler(jobs.HTTPConfig{
		URL: cfg.JobURL, Token: cfg.JobURLToken, RootCAs: pool,
		Timeout: cfg.JobTimeout, LeaseMargin: cfg.RedisNodeTimeout,
		WorkerID: cfg.WorkerID, Logger: log,
	})
	if err != nil {
		return nil, &config.Error{Var: "JOB_URL", Msg: err.Error()} // never quotes the URL
	}
	log.Info("jobs go to an HTTP service", "url", jobs.SafeURL(cfg.JobURL), "bearerToken", cfg.JobURLToken != "",
		"timeout", cfg.JobTimeout.String())
	return h, nil
}

func stateNames() []string {
	var names []string
	for _, s := range machine.States() {
		names = append(names, s.String())
	}
	return names
}
