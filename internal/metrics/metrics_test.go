package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestScrape(t *testing.T) {
	m := New(Config{
		States:   []string{"idle", "working"},
		Snapshot: func() Snapshot { return Snapshot{Leader: true, Token: 42, LeaseLeft: 3 * time.Second} },
		Queue: func(context.Context) (QueueFigures, error) {
			return QueueFigures{Pending: 5, Committed: 9, DeadLettered: 1, Epoch: 42}, nil
		},
	})
	m.SetState("idle")
	m.Transition("idle", "working")
	m.ObserveAcquire(time.Millisecond, "acquired")
	m.ObserveRenew(time.Millisecond, "renewed")
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
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
