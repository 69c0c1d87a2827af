package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/roster"
)

// Snapshot is read at scrape time.
type Snapshot struct {
	Leader    bool
	Token     int64
	LeaseLeft time.Duration
	// Leads are the partitions this replica leads, with their tokens, in a
	// fleet of more than one partition: lockworker_partition_leader and
	// lockworker_partition_fencing_token have a series for each, and none
	// for the others (a fleet's series number its partitions, not its
	// partitions times its replicas).
	Leads []roster.Owned
}

// Config configures Metrics.
type Config struct {
	// States lists every state name so each has a series from the start;
	// the first is the initial state. Required.
	States []string
	// Version and GoVersion label lockworker_build_info. Optional.
	Version, GoVersion string
	// Charts is how many state charts the replica runs (one per
	// partition): lockworker_state counts them by state. Default 1.
	Charts int
}

// Sources say where scrape-time values come from. They are given after
// New (Watch), because what they read (the leader) reports to the
// Metrics it is built with.
type Sources struct {
	// Snapshot is the leadership as /status reports it. Required.
	Snapshot func() Snapshot
	// Queue is optional; it is called with a short timeout at scrape time.
	Queue func(ctx context.Context) (figures.Queue, error)
	// Partitions is optional, for a fleet of more than one partition:
	// every partition's queue figures, by partition. When set it stands in
	// for Queue, whose figures are their sum (figures.Sum): one read per
	// scrape serves the fleet's figures and the lockworker_partition_*
	// ones. Without it (one partition) no series carries a partition
	// label: the fleet's figures are the partition's.
	Partitions func(ctx context.Context) ([]figures.Queue, error)
	// RedisOK is optional: whether this replica's last Redis call got an
	// answer (lockworker_redis_up).
	RedisOK func() bool
	// Eviction is optional: each Redis master's last read
	// maxmemory-policy, by node (lockworker_redis_eviction_unsafe).
	Eviction func() map[string]string
	// Schedules is optional: the fleet's schedules, read at scrape time
	// (lockworker_schedule_*; schedules.go).
	Schedules func(ctx context.Context) ([]figures.Schedule, error)
}

// Metrics records the daemon's events.
type Metrics struct {
	reg         *prometheus.Registry
	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	acquire     *prometheus.HistogramVec
	renew       *prometheus.HistogramVec
	changes     prometheus.Counter
	handover    prometheus.Histogram
	regressions prometheus.Counter
	states      []string
}

// handoverBuckets span a handover on notices (milliseconds) to one after
// a slow release.
var handoverBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// latencyBuckets span a loopback round trip to a slow cross-zone quorum.
var latencyBuckets = []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// New validates cfg and registers every metric on a fresh registry.
func New(cfg Config) (*Metrics, error) {
	if len(cfg.States) == 0 {
		return nil, errors.New("metrics: States is required")
	}
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		states: cfg.States,
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockworker_state", Help: "How many of the replica's state charts (one per partition; one without partitions) are in each state.",
		}, []string{"state"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockworker_transitions_total", Help: "State machine transitions.",
		}, []string{"from", "to"}),
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lockworker_acquire_seconds", Help: "Latency of lock acquire attempts by result.", Buckets: latencyBuckets,
		}, []string{"result"}),
		renew: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lockworker_renew_seconds", Help: "Latency of lease renewals by result.", Buckets: latencyBuckets,
		}, []string{"result"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockworker_leader_changes_total",
			Help: "Leaderships this replica started; summed over the fleet, every change of leader.",
		}),
		handover: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lockworker_handover_seconds",
			Help: "Time from the previous leader's end record (written just before it released) to this replica's start as leader, " +
				"on the Redis server's clock; observed by the new leader, only after a release (not after a lease ran out).",
			Buckets: handoverBuckets,
		}),
		regressions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockworker_epoch_regressions_total",
			Help: "Times this replica found a fencing epoch below a token it had observed: Redis lost its data (a flush, " +
				"an eviction, a restart without persistence, a failover to a stale replica).",
		}),
	}
	for _, s := range cfg.States {
		m.state.WithLabelValues(s).Set(0)
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "lockworker_build_info", Help: "Always 1; the labels say which lockworker runs.",
		ConstLabels: prometheus.Labels{"version": cfg.Version, "goversion": cfg.GoVersion},
	})
	info.Set(1)
	m.reg.MustRegister(m.state, m.transitions, m.acquire, m.renew, m.changes, m.handover, m.regressions, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.state.WithLabelValues(cfg.States[0]).Set(float64(max(cfg.Charts, 1)))
	return m, nil
}

// Watch registers the scrape-time gauges; call it once, before serving.
func (m *Metrics) Watch(src Sources) error {
	if src.Snapshot == nil {
		return errors.New("metrics: Sources.Snapshot is required")
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_leader", Help: "1 while this replica leads.",
		}, func() float64 { return boolFloat(src.Snapshot().Leader) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_fencing_token", Help: "Fencing token of the current leadership; 0 when not leading.",
		}, func() float64 { return float64(src.Snapshot().Token) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_lease_remaining_seconds", Help: "Time left on the local lease deadline; 0 when not leading.",
		}, func() float64 { return max(0, src.Snapshot().LeaseLeft.Seconds()) }),
	)
	switch {
	case src.Partitions != nil:
		m.reg.MustRegister(&queueCollector{parts: src.Partitions}, leadsCollector(func() []roster.Owned { return src.Snapshot().Leads }))
	case src.Queue != nil:
		m.reg.MustRegister(&queueCollector{read: src.Queue})
	}
	if src.RedisOK != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_redis_up", Help: "1 when this replica's last Redis call got an answer, else 0.",
		}, func() float64 { return boolFloat(src.RedisOK()) }))
	}
	if src.Eviction != nil {
		m.reg.MustRegister(&evictionCollector{read: src.Eviction})
	}
	if src.Schedules != nil {
		m.reg.MustRegister(&scheduleCollector{read: src.Schedules})
	}
	return nil
}

// EpochRegression counts one acquire that found the epoch below a token
// this replica had observed (leader.Observer).
func (m *Metrics) EpochRegression() { m.regressions.Inc() }

// LeaderChange counts a leadership this replica started.
func (m *Metrics) LeaderChange() { m.changes.Inc() }

// ObserveHandover records the time from the previous leader's release to
// this replica's start as leader.
func (m *Metrics) ObserveHandover(d time.Duration) { m.handover.Observe(d.Seconds()) }

// Transition records one chart's state change; its signature matches the
// machine's OnTransition hook once the states are named.
func (m *Metrics) Transition(from, to string) {
	m.transitions.WithLabelValues(from, to).Inc()
	m.state.WithLabelValues(from).Dec()
	m.state.WithLabelValues(to).Inc()
}

// ObserveAcquire records one acquire attempt, labelled with its result
// ("acquired", "held" or "error").
func (m *Metrics) ObserveAcquire(d time.Duration, result leader.AcquireResult) {
	m.acquire.WithLabelValues(result.String()).Observe(d.Seconds())
}

// ObserveRenew records one renewal, labelled with its result ("renewed",
// "lost" or "error").
func (m *Metrics) ObserveRenew(d time.Duration, result leader.RenewResult) {
	m.renew.WithLabelValues(result.String()).Observe(d.Seconds())
}

// Handler serves the registry in the Prometheus text format. A queue
// read that fails (Redis down or slow) drops the queue's series from
// that scrape, not the scrape: the replica's own series (leadership,
// the partitions it leads, lockworker_redis_up) are what say what is
// wrong, and a failed scrape would make its partitions look unowned.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

var (
	pendingDesc   = prometheus.NewDesc("lockworker_jobs_pending", "Jobs enqueued and not yet committed.", nil, nil)
	committedDesc = prometheus.NewDesc("lockworker_jobs_committed_total", "Jobs committed (fenced) since the queue began.", nil, nil)
	deadDesc      = prometheus.NewDesc("lockworker_jobs_dead_lettered", "Jobs in the dead-letter list.", nil, nil)
	epochDesc     = prometheus.NewDesc("lockworker_epoch", "Current fencing epoch of the lock.", nil, nil)
	pausedDesc    = prometheus.NewDesc("lockworker_queue_paused", "1 while an operator has paused the queue (the leader takes no new job).", nil, nil)
	oldestDesc    = prometheus.NewDesc("lockworker_jobs_oldest_pending_age_seconds",
		"How long the oldest pending job has waited since it was enqueued (Redis clock); 0 when none is pending.", nil, nil)
)

// The partitions' series, labelled with the partition's number.
var (
	partPendingDesc = prometheus.NewDesc("lockworker_partition_jobs_pending",
		"Jobs of the partition enqueued and not yet committed.", []string{"partition"}, nil)
	partOldestDesc = prometheus.NewDesc("lockworker_partition_jobs_oldest_pending_age_seconds",
		"How long the partition's oldest pending job has waited since it was enqueued (Redis clock); 0 when none is pending.",
		[]string{"partition"}, nil)
	partPausedDesc = prometheus.NewDesc("lockworker_partition_queue_paused",
		"1 for a partition whose queue an operator paused; no series for the others.", []string{"partition"}, nil)
	partLeaderDesc = prometheus.NewDesc("lockworker_partition_leader",
		"1 for each partition this replica leads (valid lease, work running); no series for the others.", []string{"partition"}, nil)
	partTokenDesc = prometheus.NewDesc("lockworker_partition_fencing_token",
		"Fencing token of this replica's leadership of the partition, for each partition it leads.", []string{"partition"}, nil)
)

// queueCollector reads the queue figures from Redis at scrape time, so
// every replica reports the same fleet-wide numbers: with parts, each
// partition's too, from the same read.
type queueCollector struct {
	read  func(ctx context.Context) (figures.Queue, error)
	parts func(ctx context.Context) ([]figures.Queue, error)
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- committedDesc
	ch <- deadDesc
	ch <- epochDesc
	ch <- pausedDesc
	ch <- oldestDesc
	if c.parts != nil {
		ch <- partPendingDesc
		ch <- partOldestDesc
		ch <- partPausedDesc
	}
	describeKeys(ch, c.parts != nil) // keys.go
	describeDelayed(ch, c.parts != nil)
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var q figures.Queue
	var parts []figures.Queue
	var err error
	if c.parts != nil {
		if parts, err = c.parts(ctx); err == nil {
			q = figures.Sum(parts)
			collectPartitions(ch, parts)
		}
	} else {
		q, err = c.read(ctx)
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(q.Pending))
	ch <- prometheus.MustNewConstMetric(committedDesc, prometheus.CounterValue, float64(q.Committed))
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(q.DeadLettered))
	ch <- prometheus.MustNewConstMetric(epochDesc, prometheus.GaugeValue, float64(q.Epoch))
	ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, boolFloat(q.Paused))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, float64(q.OldestPendingMs)/1000)
	collectKeys(ch, q) // keys.go
	collectDelayed(ch, q, parts)
}

// collectPartitions sends each partition's queue figures.
func collectPartitions(ch chan<- prometheus.Metric, parts []figures.Queue) {
	for p, q := range parts {
		n := strconv.Itoa(p)
		ch <- prometheus.MustNewConstMetric(partPendingDesc, prometheus.GaugeValue, float64(q.Pending), n)
		ch <- prometheus.MustNewConstMetric(partOldestDesc, prometheus.GaugeValue, float64(q.OldestPendingMs)/1000, n)
		if q.Paused {
			ch <- prometheus.MustNewConstMetric(partPausedDesc, prometheus.GaugeValue, 1, n)
		}
		collectPartitionKeys(ch, n, q) // keys.go
	}
}

// leadsCollector reports the partitions this replica leads.
type leadsCollector func() []roster.Owned

func (c leadsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- partLeaderDesc
	ch <- partTokenDesc
}

func (c leadsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range c() {
		n := strconv.Itoa(o.Partition)
		ch <- prometheus.MustNewConstMetric(partLeaderDesc, prometheus.GaugeValue, 1, n)
		ch <- prometheus.MustNewConstMetric(partTokenDesc, prometheus.GaugeValue, float64(o.Token), n)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var evictionDesc = prometheus.NewDesc("lockworker_redis_eviction_unsafe",
	"1 when this Redis master's maxmemory-policy evicts keys (anything but noeviction): the replica does not lead; "+
		"0 when it is noeviction.", []string{"node", "policy"}, nil)

// evictionCollector reports each master's policy as this replica last
// read it (no Redis call at scrape time).
type evictionCollector struct {
	read func() map[string]string
}

func (c *evictionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- evictionDesc }

func (c *evictionCollector) Collect(ch chan<- prometheus.Metric) {
	for node, policy := range c.read() {
		ch <- prometheus.MustNewConstMetric(evictionDesc, prometheus.GaugeValue, boolFloat(policy != "noeviction"), node, policy)
	}
}
