package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// scrape serves one scrape of m.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d:\n%s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// TestScrapeSchedules: each schedule's last tick, next tick (Unix
// seconds) and period; no last-tick series before the first tick; the
// delayed jobs of the fleet and of each partition, from the same read
// as the rest of the queue's figures; a schedule read that fails drops
// the schedules' series only.
func TestScrapeSchedules(t *testing.T) {
	last := time.Date(2026, 3, 6, 9, 0, 0, 0, time.UTC)
	m, err := New(Config{States: []string{"idle"}, Charts: 2})
	if err != nil {
		t.Fatal(err)
	}
	fail := false
	err = m.Watch(Sources{
		Snapshot: func() Snapshot { return Snapshot{} },
		Partitions: func(context.Context) ([]figures.Queue, error) {
			return []figures.Queue{{Pending: 1, Delayed: 3}, {Delayed: 4}}, nil
		},
		Schedules: func(context.Context) ([]figures.Schedule, error) {
			if fail {
				return nil, errors.New("redis: i/o timeout")
			}
			return []figures.Schedule{
				{Name: "beat", Every: "1m0s", LastTick: last, NextTick: last.Add(time.Minute), PeriodMs: 60_000},
				{Name: "weekdays", Cron: "0 9 * * 1-5", LastTick: last, NextTick: last.Add(72 * time.Hour), PeriodMs: 72 * 3_600_000},
				{Name: "new", Every: "1h0m0s", NextTick: last.Add(30*time.Minute + 500*time.Millisecond), PeriodMs: 3_600_000},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, m)
	for _, want := range []string{
		`lockworker_schedule_last_tick_timestamp_seconds{schedule="beat"} 1.7727876e+09`,
		`lockworker_schedule_next_tick_timestamp_seconds{schedule="beat"} 1.77278766e+09`,
		`lockworker_schedule_period_seconds{schedule="beat"} 60`,
		`lockworker_schedule_period_seconds{schedule="weekdays"} 259200`,
		`lockworker_schedule_next_tick_timestamp_seconds{schedule="new"} 1.7727894005e+09`,
		`lockworker_schedule_period_seconds{schedule="new"} 3600`,
		`lockworker_jobs_delayed 7`,
		`lockworker_partition_jobs_delayed{partition="0"} 3`,
		`lockworker_partition_jobs_delayed{partition="1"} 4`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `lockworker_schedule_last_tick_timestamp_seconds{schedule="new"}`) {
		t.Error("a last-tick series for a schedule that never ticked")
	}

	fail = true
	body = scrape(t, m)
	if strings.Contains(body, "lockworker_schedule_") || !strings.Contains(body, "lockworker_jobs_delayed 7") {
		t.Errorf("with the schedules unreadable, /metrics:\n%s", body)
	}
}

// TestScrapeDelayedOnePartition: with one partition the delayed jobs
// are one series, with no partition label.
func TestScrapeDelayedOnePartition(t *testing.T) {
	m, err := New(Config{States: []string{"idle"}})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(Sources{
		Snapshot: func() Snapshot { return Snapshot{} },
		Queue:    func(context.Context) (figures.Queue, error) { return figures.Queue{Delayed: 2}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	body := scrape(t, m)
	if !strings.Contains(body, "lockworker_jobs_delayed 2") || strings.Contains(body, "partition=") || strings.Contains(body, "lockworker_schedule_") {
		t.Errorf("/metrics with one partition and no Schedules source:\n%s", body)
	}
}
