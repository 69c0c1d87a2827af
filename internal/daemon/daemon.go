package daemon

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/buildinfo"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/dashboard"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/metrics"
	"github.com/lockworker/lockworker/internal/operator"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/roster"
)

// Daemon is one replica, assembled and ready to Run.
type Daemon struct {
	cfg      config.Config
	log      *slog.Logger
	be       *backend.Backend
	metrics  *metrics.Metrics
	lanes    []*lane // by partition: one with one partition
	srv      *http.Server
	conns    *httpapi.ConnLimiter // bounds srv's connections
	ln       net.Listener
	stopping atomic.Bool // set on a signal: /readyz answers 503

	// The coordinator tells each lane whether to contend (its share of
	// the fleet's partitions, or standing by); the renewer renews the
	// lanes' leases together.
	coord   *partition.Coordinator
	renewer *leader.Renewer

	// The fleet's shared view and the operator's side.
	roster   *roster.Roster
	reporter *roster.Reporter
	history  *history.History
	operator *operator.Operator
	dash     *dashboard.Dashboard
	build    buildinfo.Info
	host     string
	control  chan struct{}  // a control notice: check for a step-down request
	changes  chan struct{}  // the dashboard's Source.Changes
	checked  chan struct{}  // closed once the partition count is checked
	eviction *evictionGuard // no leadership on a Redis that evicts keys
	replicas *replicaShortage
	// slots bounds the jobs in flight over every lane (JOB_CONCURRENCY).
	slots *jobs.Slots
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
		control: make(chan struct{}, 1), changes: make(chan struct{}, 1), checked: make(chan struct{})}
	d.host, _ = os.Hostname()
	if err := d.assemble(); err != nil {
		_ = be.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		_ = be.Close()
		return nil, fmt.Errorf("PORT %d: %w", cfg.Port, err)
	}
	d.ln = d.conns.Listener(ln)
	return d, nil
}

// assemble builds the parts in dependency order, so no part is wired to
// another that does not exist yet.
func (d *Daemon) assemble() error {
	cfg := d.cfg
	var err error
	if d.metrics, err = metrics.New(metrics.Config{States: stateNames(), Version: d.build.Short(), GoVersion: d.build.Go,
		Charts: d.be.Partitions}); err != nil {
		return err
	}
	d.replicas = newReplicaShortage(d.log)
	d.eviction = newEvictionGuard(d.be.EvictionPolicies, evictionCheckInterval(cfg), cfg.RedisNodeTimeout, d.log)
	d.eviction.changed = d.guardsChanged
	if d.renewer, err = leader.NewRenewer(leader.RenewerConfig{Group: d.be.Renewals, Partitions: d.be.Partitions,
		Interval: cfg.RenewInterval}); err != nil {
		return err
	}
	if d.slots, err = jobs.NewSlots(cfg.JobConcurrency); err != nil {
		return err
	}
	for p := range d.be.Partitions {
		l, err := d.newLane(p)
		if err != nil {
			return err
		}
		d.lanes = append(d.lanes, l)
	}
	sayHandler(cfg, d.log)
	src := metrics.Sources{Snapshot: d.metricsSnapshot, Queue: d.stats, RedisOK: d.redisOK,
		Eviction: d.eviction.byNode, Schedules: d.schedules}
	if _, one := d.lock(); !one {
		src.Partitions = d.partitionStats
	}
	if err := d.metrics.Watch(src); err != nil {
		return err
	}
	d.metrics.WatchSlots(d.slots.Size, d.slots.InUse)
	if err := d.assembleFleet(); err != nil {
		return err
	}
	if err := d.assemblePartitions(); err != nil {
		return err
	}
	if err := d.newDashboard(); err != nil {
		return err
	}
	return d.newServer()
}

// lock is the fleet's one lock when it has one partition: /status, the
// registry record, the metrics and the page then speak of it as the lock
// (its holder, its token, its lease), as they did before partitions.
// With several, they speak of each partition instead.
func (d *Daemon) lock() (*lane, bool) {
	if len(d.lanes) == 1 {
		return d.lanes[0], true
	}
	return nil, false
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

// redisOK reports whether Redis answers this replica: its last registry
// read did (the coordinator reads it every half refresh period, whether
// or not the replica leads or sends any lock command), or the last renewal
// of a lane that leads did (a registry read bounded by half a refresh
// period may time out on a loaded host while the leases renew: /readyz
// must not flap then).
func (d *Daemon) redisOK() bool {
	if d.coord.Status().ReadOK {
		return true
	}
	for _, s := range d.snapshots() {
		if s.Leads() && s.RedisOK {
			return true
		}
	}
	return false
}

// jobHandler is the handler JOB_HANDLER names.
func jobHandler(cfg config.Config, log *slog.Logger) (jobs.Handler, error) {
	switch cfg.JobHandler {
	case config.HandlerExec:
		return jobs.NewExecHandler(jobs.ExecConfig{
			Command:  strings.Fields(cfg.JobCommand),
			Grace:    cfg.JobStopGrace,
			Timeout:  cfg.JobTimeout,
			AllowEnv: cfg.JobEnv,
			WorkerID: cfg.WorkerID,
			Logger:   log,
		})
	case config.HandlerHTTP:
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
	return h, nil
}

// sayHandler says once where jobs go, when that is an HTTP service (each
// lane has its own handler, with its own logger).
func sayHandler(cfg config.Config, log *slog.Logger) {
	if cfg.JobHandler == config.HandlerHTTP {
		log.Info("jobs go to an HTTP service", "url", jobs.SafeURL(cfg.JobURL), "bearerToken", cfg.JobURLToken != "",
			"timeout", cfg.JobTimeout.String())
	}
}

func stateNames() []string {
	var names []string
	for _, s := range machine.States() {
		names = append(names, s.String())
	}
	return names
}
