package statusdoc

import (
	"encoding/json"
	"testing"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// TestStatusQueueJSON holds the queue's part of /status byte for byte, as
// operators' scripts read it: the figures, or zeros and why not.
func TestStatusQueueJSON(t *testing.T) {
	for _, c := range []struct {
		q    Queue
		want string
	}{
		{Queue{Queue: figures.Queue{Pending: 3, Committed: 9, DeadLettered: 1, Epoch: 42, Paused: true, OldestPendingMs: 1500,
			InFlight: 2, Parked: 1, OldestParkedMs: 60000, Retries: 7, Delayed: 4}},
			`{"pending":3,"committed":9,"deadLettered":1,"epoch":42,"paused":true,"oldestPendingMs":1500,` +
				`"inFlight":2,"parked":1,"oldestParkedMs":60000,"retries":7,"delayed":4}`},
		{Queue{Error: "unavailable"},
			`{"pending":0,"committed":0,"deadLettered":0,"epoch":0,"paused":false,"oldestPendingMs":0,` +
				`"inFlight":0,"parked":0,"oldestParkedMs":0,"retries":0,"delayed":0,"error":"unavailable"}`},
	} {
		got, err := json.Marshal(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("queue in /status:\n got %s\nwant %s", got, c.want)
		}
	}
}
