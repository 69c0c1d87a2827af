package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// TestScrapeKeys: the keys in flight, the parked keys and the oldest
// parked age, fleet-wide and per partition, the retries, and this
// replica's job slots; without partitions, no partition label.
func TestScrapeKeys(t *testing.T) {
	for _, tc := range []struct {
		name          string
		src           Sources
		want, notWant []string
	}{
		{"partitions", Sources{Snapshot: func() Snapshot { return Snapshot{} },
			Partitions: func(context.Context) ([]figures.Queue, error) {
				return []figures.Queue{
					{InFlight: 3, Retries: 7},
					{InFlight: 1, Parked: 2, OldestParkedMs: 754_000, Retries: 5},
				}, nil
			}}, []string{
			`lockworker_jobs_in_flight 4`,
			`lockworker_keys_parked 2`,
			`lockworker_keys_oldest_parked_age_seconds 754`,
			`lockworker_job_retries_total 12`,
			`lockworker_partition_jobs_in_flight{partition="0"} 3`,
			`lockworker_partition_keys_parked{partition="0"} 0`,
			`lockworker_partition_keys_parked{partition="1"} 2`,
			`lockworker_partition_keys_oldest_parked_age_seconds{partition="0"} 0`,
			`lockworker_partition_keys_oldest_parked_age_seconds{partition="1"} 754`,
			`lockworker_job_slots 16`,
			`lockworker_job_slots_in_use 5`,
		}, nil},
		{"one partition", Sources{Snapshot: func() Snapshot { return Snapshot{} },
			Queue: func(context.Context) (figures.Queue, error) {
				return figures.Queue{InFlight: 1, Parked: 1, OldestParkedMs: 2_500, Retries: 3}, nil
			}}, []string{
			`lockworker_jobs_in_flight 1`,
			`lockworker_keys_parked 1`,
			`lockworker_keys_oldest_parked_age_seconds 2.5`,
			`lockworker_job_retries_total 3`,
		}, []string{`lockworker_partition_keys_parked`, `lockworker_partition_jobs_in_flight`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{States: []string{"idle"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Watch(tc.src); err != nil {
				t.Fatal(err)
			}
			m.WatchSlots(func() int { return 16 }, func() int { return 5 })
			body := scrape(t, m)
			for _, w := range tc.want {
				if !strings.Contains(body, w+"\n") {
					t.Errorf("missing %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("%q served without partitions", w)
				}
			}
			if t.Failed() {
				t.Logf("scrape:\n%s", body)
			}
		})
	}
}
