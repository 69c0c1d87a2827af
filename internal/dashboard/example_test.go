package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/lockworker/lockworker/internal/dashboard"
	"github.com/lockworker/lockworker/internal/roster"
)

// fixed is a Source that never changes, so it sends no notices.
type fixed struct{ s dashboard.Snapshot }

func (f fixed) Snapshot(context.Context) (dashboard.Snapshot, error) { return f.s, nil }
func (fixed) Changes() <-chan struct{}                               { return nil }

// The daemon builds a dashboard over its Source (and, with ADMIN_TOKEN,
// its Actions), mounts Handler at "/" and runs Run beside the HTTP
// server, in the same errgroup, so /events is fed and its streams end on
// shutdown.
func Example() {
	d, err := dashboard.New(dashboard.Config{Source: fixed{dashboard.Snapshot{
		Self:     dashboard.Self{WorkerID: "worker-1", State: "working"},
		Replicas: []roster.Record{{WorkerID: "worker-1", State: "working", Leader: true, Token: 7}},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// go d.Run(ctx) in the daemon; a single request needs no Run.
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/snapshot", nil))
	var s dashboard.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Code, s.Replicas[0].WorkerID, "leads with token", s.Replicas[0].Token)
	// Output: 200 worker-1 leads with token 7
}
