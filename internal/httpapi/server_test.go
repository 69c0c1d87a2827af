package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/statusdoc"
)

func TestEndpoints(t *testing.T) {
	ready := false
	var got []byte
	h := mustNew(t, Config{
		Status: func(context.Context) statusdoc.Status {
			return statusdoc.Status{WorkerID: "w1", State: "working", Leader: true, Token: 7, LockKey: "k"}
		},
		Ready: func() error {
			if !ready {
				return errors.New("not yet")
			}
			return nil
		},
		JobsToken: "t0ken-0123456789abcdef",
		Enqueue: func(_ context.Context, it jobs.Item) (jobs.Receipt, error) {
			got = it.Payload
			return jobs.Receipt{ID: "01JOB"}, nil
		},
		EnqueueMany: func(context.Context, []jobs.Item) ([]jobs.Receipt, error) { t.Fatal("EnqueueMany"); return nil, nil },
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
	if rec := do("POST", "/jobs", "Bearer t0ken-0123456789abcdef", "payload"); rec.Code != 202 || string(got) != "payload" || !strings.Contains(rec.Body.String(), "01JOB") {
		t.Fatalf("POST /jobs: %d %s (got %q)", rec.Code, rec.Body, got)
	}
	got = nil
	if rec := do("POST", "/jobs", "Bearer t0ken-0123456789abcdef", ""); rec.Code != 400 || got != nil || !strings.Contains(rec.Body.String(), "empty payload") {
		t.Fatalf("POST /jobs with an empty body: %d %s; want 400 and nothing enqueued", rec.Code, rec.Body)
	}
}

func TestJobsOffWithoutToken(t *testing.T) {
	h := mustNew(t, Config{
		Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} },
		Enqueue: func(context.Context, jobs.Item) (jobs.Receipt, error) {
			t.Fatal("enqueued")
			return jobs.Receipt{}, nil
		},
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
		{Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }, JobsToken: "t0ken-0123456789abcdef"}, "Enqueue is nil"},
		{Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }, JobsToken: "t0ken-0123456789abcdef",
			Enqueue: func(context.Context, jobs.Item) (jobs.Receipt, error) { return jobs.Receipt{}, nil }}, "EnqueueMany is nil"},
		{Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }, MaxBodyInFlight: jobs.MaxBatchBytes - 1}, "MaxBodyInFlight"},
		{Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }, JobsToken: "t0ken",
			Enqueue:     func(context.Context, jobs.Item) (jobs.Receipt, error) { return jobs.Receipt{}, nil },
			EnqueueMany: func(context.Context, []jobs.Item) ([]jobs.Receipt, error) { return nil, nil }}, "JobsToken: bearer: token shorter than 16 bytes"},
		{Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }, AdminToken: "short"},
			"AdminToken: bearer: token shorter than 16 bytes"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}
