package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Snapshot is read at scrape time.
type Snapshot struct {
	Leader    bool
	Token     int64
	LeaseLeft time.Duration
}

// QueueFigures are the job queue gauges, read at scrape time.
type QueueFigures struct {
	Pending, Committed, DeadLettered, Epoch int64
}

// Config says where scrape-time values come from.
type Config struct {
	// States lists every state name so each has a series from the start.
	States []string
	// Snapshot is required.
	Snapshot func() Snapshot
	// Queue is optional; it is called with a short timeout at scrape time.
	Queue func(ctx context.Context) (QueueFigures, error)
}

// Metrics records the daemon's events.
type Metrics struct {
	reg         *prometheus.Registry
	state       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	acquire     *prometheus.HistogramVec
	renew       *prometheus.HistogramVec
	states      []string
}

// latencyBuckets span a loopback round trip to a slow cross-zone quorum.
var latencyBuckets = []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// New registers every metric on a fresh registry.
func New(cfg Config) *Metrics {
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		states: cfg.States,
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockworker_state", Help: "1 for the state the machine is in, 0 for the others.",
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
	}
	for _, s := range cfg.States {
		m.state.WithLabelValues(s).Set(0)
	}
	m.reg.MustRegister(m.state, m.transitions, m.acquire, m.renew,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_leader", Help: "1 while this replica leads.",
		}, func() float64 { return boolFloat(cfg.Snapshot().Leader) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_fencing_token", Help: "Fencing token of the current leadership; 0 when not leading.",
		}, func() float64 { return float64(cfg.Snapshot().Token) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "lockworker_lease_remaining_seconds", Help: "Time left on the local lease deadline; 0 when not leading.",
		}, func() float64 { return max(0, cfg.Snapshot().LeaseLeft.Seconds()) }),
	)
	if cfg.Queue != nil {
		m.reg.MustRegister(&queueCollector{read: cfg.Queue})
	}
	return m
}

// Transition records a state change.
func (m *Metrics) Transition(from, to string) {
	m.transitions.WithLabelValues(from, to).Inc()
	m.state.WithLabelValues(from).Set(0)
	m.state.WithLabelValues(to).Set(1)
}

// SetState marks the initial state.
func (m *Metrics) SetState(s string) { m.state.WithLabelValues(s).Set(1) }

// ObserveAcquire records one acquire attempt; result is "acquired", "held" or "error".
func (m *Metrics) ObserveAcquire(d time.Duration, result string) {
	m.acquire.WithLabelValues(result).Observe(d.Seconds())
}

// ObserveRenew records one renewal; result is "renewed", "lost" or "error".
func (m *Metrics) ObserveRenew(d time.Duration, result string) {
	m.renew.WithLabelValues(result).Observe(d.Seconds())
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

var (
	pendingDesc   = prometheus.NewDesc("lockworker_jobs_pending", "Jobs enqueued and not yet committed.", nil, nil)
	committedDesc = prometheus.NewDesc("lockworker_jobs_committed_total", "Jobs committed (fenced) since the queue began.", nil, nil)
	deadDesc      = prometheus.NewDesc("lockworker_jobs_dead_lettered", "Jobs in the dead-letter list.", nil, nil)
	epochDesc     = prometheus.NewDesc("lockworker_epoch", "Current fencing epoch of the lock.", nil, nil)
)

// queueCollector reads the queue figures from Redis at scrape time, so
// every replica reports the same fleet-wide numbers.
type queueCollector struct {
	read func(ctx context.Context) (QueueFigures, error)
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- committedDesc
	ch <- deadDesc
	ch <- epochDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	q, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(q.Pending))
	ch <- prometheus.MustNewConstMetric(committedDesc, prometheus.CounterValue, float64(q.Committed))
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(q.DeadLettered))
	ch <- prometheus.MustNewConstMetric(epochDesc, prometheus.GaugeValue, float64(q.Epoch))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
