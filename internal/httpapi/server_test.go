package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

func TestEndpoints(t *testing.T) {
	ready := false
	var got []byte
	h := mustNew(t, Config{
		Status: func(context.Context) Status {
			return Status{WorkerID: "w1", State: "working", Leader: true, Token: 7, LockKey: "k"}
		},
		Ready: func() error {
			if !ready {
				return errors.New("not yet")
			}
			return nil
		},
		JobsToken: "t0ken",
		Enqueue: func(_ context.Context, _ string, p []byte) (string, error) {
			got = p
			return "01JOB", nil
		},
		EnqueueMany: func(context.Context, []string, [][]byte) ([]string, error) { t.Fatal("EnqueueMany"); return nil, nil },
	})
	do := func(method, path, auth, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if c := do("GET", "/healthz", "", "").Code; c != 200 {
		t.Fatalf("healthz %d", c)
	}
	if rec := do("GET", "/readyz", "", ""); rec.Code != 503 || !strings.Contains(rec.Body.String(), `"reason":"not yet"`) {
		t.Fatalf("readyz while not ready: %d %s", rec.Code, rec.Body)
	}
	ready = true
	if c := do("GET", "/readyz", "", "").Code; c != 200 {
		t.Fatalf("readyz while ready: %d", c)
	}
	rec := do("GET", "/status", "", "")
	var st map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workerId", "state", "leader", "token", "lockKey"} {
		if _, ok := st[k]; !ok {
			t.Fatalf("/status lacks %q: %s", k, rec.Body)
		}
	}
	if st["token"].(float64) != 7 || st["leader"] != true {
		t.Fatalf("/status = %s", rec.Body)
	}
	if c := do("POST", "/jobs", "", "x").Code; c != 401 {
		t.Fatalf("POST /jobs without token: %d", c)
	}
	if c := do("POST", "/jobs", "Bearer wrong", "x").Code; c != 401 {
		t.Fatalf("POST /jobs with wrong token: %d", c)
	}
	if rec := do("POST", "/jobs", "Bearer t0ken", "payload"); rec.Code != 202 || string(got) != "payload" || !strings.Contains(rec.Body.String(), "01JOB") {
		t.Fatalf("POST /jobs: %d %s (got %q)", rec.Code, rec.Body, got)
	}
	got = nil
	if rec := do("POST", "/jobs", "Bearer t0ken", ""); rec.Code != 400 || got != nil || !strings.Contains(rec.Body.String(), "empty payload") {
		t.Fatalf("POST /jobs with an empty body: %d %s; want 400 and nothing enqueued", rec.Code, rec.Body)
	}
}

func TestJobsOffWithoutToken(t *testing.T) {
	h := mustNew(t, Config{
		Status:  func(context.Context) Status { return Status{} },
		Enqueue: func(context.Context, string, []byte) (string, error) { t.Fatal("enqueued"); return "", nil },
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/jobs", strings.NewReader("x")))
	if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /jobs with no JOBS_TOKEN: %d", rec.Code)
	}
}

func mustNew(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Status is required"},
		{Config{Status: func(context.Context) Status { return Status{} }, JobsToken: "t"}, "Enqueue is nil"},
		{Config{Status: func(context.Context) Status { return Status{} }, JobsToken: "t",
			Enqueue: func(context.Context, string, []byte) (string, error) { return "", nil }}, "EnqueueMany is nil"},
		{Config{Status: func(context.Context) Status { return Status{} }, MaxBatchJobs: -1}, "MaxBatchJobs"},
		{Config{Status: func(context.Context) Status { return Status{} }, MaxJobBytes: -1}, "MaxJobBytes"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// TestStatusQueueJSON holds the queue's part of /status byte for byte, as
// operators' scripts read it: the figures, or zeros and why not.
func TestStatusQueueJSON(t *testing.T) {
	for _, c := range []struct {
		q    Queue
		want string
	}{
		{Queue{Queue: figures.Queue{Pending: 3, Committed: 9, DeadLettered: 1, Epoch: 42, Paused: true, OldestPendingMs: 1500,
			InFlight: 2, Parked: 1, OldestParkedMs: 60000, Retries: 7}},
			`{"pending":3,"committed":9,"deadLettered":1,"epoch":42,"paused":true,"oldestPendingMs":1500,` +
				`"inFlight":2,"parked":1,"oldestParkedMs":60000,"retries":7}`},
		{Queue{Error: "unavailable"},
			`{"pending":0,"committed":0,"deadLettered":0,"epoch":0,"paused":false,"oldestPendingMs":0,` +
				`"inFlight":0,"parked":0,"oldestParkedMs":0,"retries":0,"error":"unavailable"}`},
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
