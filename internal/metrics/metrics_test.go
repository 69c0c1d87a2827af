package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/roster"
)

func TestScrape(t *testing.T) {
	m, err := New(Config{States: []string{"idle", "working"}, Version: "v1.2.3", GoVersion: "go1.26.8"})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(Sources{
		Snapshot: func() Snapshot { return Snapshot{Leader: true, Token: 42, LeaseLeft: 3 * time.Second} },
		Queue: func(context.Context) (figures.Queue, error) {
			return figures.Queue{Pending: 5, Committed: 9, DeadLettered: 1, Epoch: 42, Paused: true, OldestPendingMs: 90_000}, nil
		},
		RedisOK: func() bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Transition("idle", "working")
	m.ObserveAcquire(time.Millisecond, leader.Acquired)
	m.ObserveRenew(time.Millisecond, leader.Renewed)
	m.LeaderChange()
	m.ObserveHandover(4 * time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`lockworker_state{state="working"} 1`,
		`lockworker_state{state="idle"} 0`,
		`lockworker_transitions_total{from="idle",to="working"} 1`,
		`lockworker_leader 1`,
		`lockworker_fencing_token 42`,
		`lockworker_lease_remaining_seconds 3`,
		`lockworker_acquire_seconds_count{result="acquired"} 1`,
		`lockworker_renew_seconds_count{result="renewed"} 1`,
		`lockworker_jobs_pending 5`,
		`lockworker_jobs_committed_total 9`,
		`lockworker_jobs_dead_lettered 1`,
		`lockworker_epoch 42`,
		`lockworker_queue_paused 1`,
		`lockworker_jobs_oldest_pending_age_seconds 90`,
		`lockworker_redis_up 0`,
		`lockworker_leader_changes_total 1`,
		`lockworker_handover_seconds_bucket{le="0.005"} 1`,
		`lockworker_handover_seconds_bucket{le="0.0025"} 0`,
		`lockworker_build_info{goversion="go1.26.8",version="v1.2.3"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "States is required") {
		t.Fatalf("New(Config{}) = %v, want the missing States named", err)
	}
	m, err := New(Config{States: []string{"idle"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(Sources{}); err == nil || !strings.Contains(err.Error(), "Snapshot is required") {
		t.Fatalf("Watch(Sources{}) = %v, want the missing Snapshot named", err)
	}
}

// TestScrapePartitions: with partitions, one read of every partition's
// figures gives the fleet's (summed) and each partition's; the
// partitions this replica leads have a leader and a token series, the
// others none; only a paused partition has a paused series.
func TestScrapePartitions(t *testing.T) {
	m, err := New(Config{States: []string{"idle", "working"}, Charts: 3})
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	err = m.Watch(Sources{
		Snapshot: func() Snapshot {
			return Snapshot{Leader: true, Leads: []roster.Owned{{Partition: 0, Token: 7}, {Partition: 2, Token: 9}}}
		},
		Queue: func(context.Context) (figures.Queue, error) {
			t.Error("Queue read beside Partitions")
			return figures.Queue{}, nil
		},
		Partitions: func(context.Context) ([]figures.Queue, error) {
			reads++
			return []figures.Queue{
				{Pending: 2, Committed: 5, OldestPendingMs: 1500, Epoch: 7},
				{Pending: 0, Committed: 1, Paused: true, Epoch: 3},
				{Pending: 4, Committed: 2, OldestPendingMs: 30_000, Epoch: 9},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`lockworker_jobs_pending 6`,
		`lockworker_jobs_committed_total 8`,
		`lockworker_jobs_oldest_pending_age_seconds 30`,
		`lockworker_epoch 9`,
		`lockworker_queue_paused 1`,
		`lockworker_partition_jobs_pending{partition="0"} 2`,
		`lockworker_partition_jobs_pending{partition="1"} 0`,
		`lockworker_partition_jobs_pending{partition="2"} 4`,
		`lockworker_partition_jobs_oldest_pending_age_seconds{partition="0"} 1.5`,
		`lockworker_partition_jobs_oldest_pending_age_seconds{partition="1"} 0`,
		`lockworker_partition_queue_paused{partition="1"} 1`,
		`lockworker_partition_leader{partition="0"} 1`,
		`lockworker_partition_leader{partition="2"} 1`,
		`lockworker_partition_fencing_token{partition="0"} 7`,
		`lockworker_partition_fencing_token{partition="2"} 9`,
		`lockworker_state{state="idle"} 3`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, not := range []string{`lockworker_partition_leader{partition="1"}`, `lockworker_partition_queue_paused{partition="0"}`} {
		if strings.Contains(string(body), not) {
			t.Errorf("/metrics has %q", not)
		}
	}
	if reads != 1 {
		t.Errorf("one scrape read the partitions %d times, want once", reads)
	}
}

// TestScrapeOnePartition: without partitions no series carries a
// partition label.
func TestScrapeOnePartition(t *testing.T) {
	m, err := New(Config{States: []string{"idle"}})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(Sources{
		Snapshot: func() Snapshot { return Snapshot{Leader: true, Token: 3} },
		Queue:    func(context.Context) (figures.Queue, error) { return figures.Queue{Pending: 1}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "lockworker_jobs_pending 1") || strings.Contains(string(body), "partition=") {
		t.Errorf("/metrics with one partition:\n%s", body)
	}
}

// TestScrapeWithoutRedis: a queue read that fails drops the queue's
// series, not the scrape: the leadership, the partitions led and
// lockworker_redis_up are still served.
func TestScrapeWithoutRedis(t *testing.T) {
	m, err := New(Config{States: []string{"idle"}})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(Sources{
		Snapshot:   func() Snapshot { return Snapshot{Leader: true, Leads: []roster.Owned{{Partition: 1, Token: 4}}} },
		Partitions: func(context.Context) ([]figures.Queue, error) { return nil, errors.New("redis: connection refused") },
		RedisOK:    func() bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d:\n%s", rec.Code, body)
	}
	for _, want := range []string{`lockworker_partition_leader{partition="1"} 1`, "lockworker_redis_up 0", "lockworker_leader 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "lockworker_jobs_pending") || strings.Contains(body, "lockworker_partition_jobs_pending") {
		t.Errorf("/metrics serves queue figures it could not read:\n%s", body)
	}
}
