package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// The keys' series: what runs, what waits on an operator, and what
// retries, read in the same scrape as the queue's other figures.
var (
	inFlightDesc = prometheus.NewDesc("lockworker_jobs_in_flight",
		"Keys whose jobs a leader has claimed and runs, one job of each at a time: the fleet's jobs in flight.", nil, nil)
	parkedDesc = prometheus.NewDesc("lockworker_keys_parked",
		"Keys parked after a job failed for good: each holds that job and its later jobs until an operator retries or skips it.", nil, nil)
	oldestParkedDesc = prometheus.NewDesc("lockworker_keys_oldest_parked_age_seconds",
		"How long the longest-parked key has been parked; 0 when none is.", nil, nil)
	retriesDesc = prometheus.NewDesc("lockworker_job_retries_total",
		"Failed attempts retried (each backed off on its key) since the queue began.", nil, nil)

	partInFlightDesc = prometheus.NewDesc("lockworker_partition_jobs_in_flight",
		"Keys of the partition whose jobs its leader has claimed and runs.", []string{"partition"}, nil)
	partParkedDesc = prometheus.NewDesc("lockworker_partition_keys_parked",
		"Keys of the partition parked until an operator retries or skips them.", []string{"partition"}, nil)
	partOldestParkedDesc = prometheus.NewDesc("lockworker_partition_keys_oldest_parked_age_seconds",
		"How long the partition's longest-parked key has been parked; 0 when none is.", []string{"partition"}, nil)

	slotsDesc = prometheus.NewDesc("lockworker_job_slots",
		"This replica's job slots (JOB_CONCURRENCY): the most jobs it runs at once over the partitions it leads.", nil, nil)
	slotsInUseDesc = prometheus.NewDesc("lockworker_job_slots_in_use",
		"This replica's job slots held now: its jobs in flight.", nil, nil)
)

// describeKeys sends the keys' descriptions; parts: the per-partition
// ones too.
func describeKeys(ch chan<- *prometheus.Desc, parts bool) {
	ch <- inFlightDesc
	ch <- parkedDesc
	ch <- oldestParkedDesc
	ch <- retriesDesc
	if parts {
		ch <- partInFlightDesc
		ch <- partParkedDesc
		ch <- partOldestParkedDesc
	}
}

// collectKeys sends the fleet's keys' figures.
func collectKeys(ch chan<- prometheus.Metric, q figures.Queue) {
	ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(q.InFlight))
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(q.Parked))
	ch <- prometheus.MustNewConstMetric(oldestParkedDesc, prometheus.GaugeValue, float64(q.OldestParkedMs)/1000)
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(q.Retries))
}

// collectPartitionKeys sends partition n's keys' figures.
func collectPartitionKeys(ch chan<- prometheus.Metric, n string, q figures.Queue) {
	ch <- prometheus.MustNewConstMetric(partInFlightDesc, prometheus.GaugeValue, float64(q.InFlight), n)
	ch <- prometheus.MustNewConstMetric(partParkedDesc, prometheus.GaugeValue, float64(q.Parked), n)
	ch <- prometheus.MustNewConstMetric(partOldestParkedDesc, prometheus.GaugeValue, float64(q.OldestParkedMs)/1000, n)
}

// WatchSlots registers this replica's job slots (jobs.Slots: its size
// and how many are held), read at scrape time; call it once, before
// serving.
func (m *Metrics) WatchSlots(size func() int, inUse func() int) {
	m.reg.MustRegister(slotsCollector{size: size, inUse: inUse})
}

type slotsCollector struct{ size, inUse func() int }

func (c slotsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- slotsDesc
	ch <- slotsInUseDesc
}

func (c slotsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(c.size()))
	ch <- prometheus.MustNewConstMetric(slotsInUseDesc, prometheus.GaugeValue, float64(c.inUse()))
}
