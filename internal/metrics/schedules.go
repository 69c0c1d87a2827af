package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// The schedules' series, labelled with the schedule's name, and the
// delayed jobs'. A schedule's are read from Redis at scrape time, so
// every replica reports the same figures, as for the queue's.
var (
	scheduleLastDesc = prometheus.NewDesc("lockworker_schedule_last_tick_timestamp_seconds",
		"Scheduled time of the schedule's last tick enqueued, in Unix seconds; no series before its first tick.",
		[]string{"schedule"}, nil)
	scheduleNextDesc = prometheus.NewDesc("lockworker_schedule_next_tick_timestamp_seconds",
		"When the schedule ticks next, in Unix seconds; no series when it never ticks again.", []string{"schedule"}, nil)
	schedulePeriodDesc = prometheus.NewDesc("lockworker_schedule_period_seconds",
		"The gap between the schedule's consecutive ticks: its every; for a cron schedule the gap from its last tick "+
			"to the one after (before the first tick, from its next tick to the one after).", []string{"schedule"}, nil)
	delayedDesc = prometheus.NewDesc("lockworker_jobs_delayed",
		"Delayed jobs not yet due (not counted in lockworker_jobs_pending until they join their keys' order).", nil, nil)
	partDelayedDesc = prometheus.NewDesc("lockworker_partition_jobs_delayed",
		"The partition's delayed jobs not yet due.", []string{"partition"}, nil)
)

// scheduleCollector reads the schedules at scrape time.
type scheduleCollector struct {
	read func(ctx context.Context) ([]figures.Schedule, error)
}

func (c *scheduleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- scheduleLastDesc
	ch <- scheduleNextDesc
	ch <- schedulePeriodDesc
}

// Collect sends each schedule's series; a failed read drops them from
// this scrape only (Handler's ContinueOnError), as for the queue.
func (c *scheduleCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	list, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(scheduleLastDesc, err)
		return
	}
	for _, s := range list {
		if !s.LastTick.IsZero() {
			ch <- prometheus.MustNewConstMetric(scheduleLastDesc, prometheus.GaugeValue, unixSeconds(s.LastTick), s.Name)
		}
		if !s.NextTick.IsZero() {
			ch <- prometheus.MustNewConstMetric(scheduleNextDesc, prometheus.GaugeValue, unixSeconds(s.NextTick), s.Name)
		}
		ch <- prometheus.MustNewConstMetric(schedulePeriodDesc, prometheus.GaugeValue, float64(s.PeriodMs)/1000, s.Name)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// describeDelayed and collectDelayed add the delayed jobs to the queue's
// series (queueCollector): the fleet's, and with parts each partition's,
// from the same read.
func describeDelayed(ch chan<- *prometheus.Desc, parts bool) {
	ch <- delayedDesc
	if parts {
		ch <- partDelayedDesc
	}
}

func collectDelayed(ch chan<- prometheus.Metric, q figures.Queue, parts []figures.Queue) {
	ch <- prometheus.MustNewConstMetric(delayedDesc, prometheus.GaugeValue, float64(q.Delayed))
	for p, pq := range parts {
		ch <- prometheus.MustNewConstMetric(partDelayedDesc, prometheus.GaugeValue, float64(pq.Delayed), strconv.Itoa(p))
	}
}
