package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// card is a payload no stranger may read.
const card = "card=4111111111111111"

// getAs is GET url with the admin token when admin.
func getAs(t *testing.T, url string, admin bool) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if admin {
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasSuffix(url, "/events") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return data
			}
		}
		t.Fatalf("no event on %s", url)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noHandlerOutput: what w serves to a reader without the admin token
// (/api/snapshot, /events, /status) shows no handler output, only the
// classes in want; with the token, /api/snapshot shows the error in full.
func noHandlerOutput(t *testing.T, w *worker, want ...string) {
	t.Helper()
	for _, path := range []string{"/api/snapshot", "/events", "/status"} {
		out := getAs(t, w.url(path), false)
		if strings.Contains(out, "4111111111111111") {
			t.Errorf("%s shows the payload to a reader without the admin token:\n%s", path, out)
		}
		if path == "/api/snapshot" {
			for _, c := range want {
				if !strings.Contains(out, c) {
					t.Errorf("%s lacks %s:\n%s", path, c, out)
				}
			}
		}
	}
	if out := getAs(t, w.url("/api/snapshot"), true); !strings.Contains(out, card) {
		t.Errorf("/api/snapshot with the admin token lacks the error in full:\n%s", out)
	}
}

// TestHandlerOutputNotShownToStrangers: a handler that echoes its
// payload on stderr (exec), or in its answer (http: a 409, then a 422),
// puts it in the dead letter's error and the replica's last error. A
// reader without the admin token sees their classes and the job's ID,
// never the output; with the token, the errors in full.
func TestHandlerOutputNotShownToStrangers(t *testing.T) {
	processTest(t)
	t.Run("exec", func(t *testing.T) {
		t.Parallel()
		r := redistest.Start(t, redistest.Options{})
		script := filepath.Join(t.TempDir(), "echo.sh")
		if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >&2\nexit 3\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		env := append(fastEnv(r.URL()), "ADMIN_TOKEN="+testAdminToken, "JOB_HANDLER=exec", "JOB_COMMAND=/bin/sh "+script,
			"JOB_MAX_ATTEMPTS=1", "JOB_ON_FAILURE=dead-letter")
		w := startWorker(t, "cls-exec", env...)
		leaderOf(t, 10*time.Second, w)
		enqueueOne(t, env, card)
		poll.Until(t, 10*time.Second, "the job dead-lettered", func() bool { return queueStatus(t, env).DeadLettered == 1 })
		noHandlerOutput(t, w, `"class":"exit code 3"`)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		r := redistest.Start(t, redistest.Options{})
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if n.Add(1) == 1 {
				w.WriteHeader(http.StatusConflict) // ends the leadership: the replica's last error
			} else {
				w.WriteHeader(http.StatusUnprocessableEntity) // dead-letters the job
			}
			_, _ = w.Write(body)
		}))
		t.Cleanup(srv.Close)
		env := append(fastEnv(r.URL()), "ADMIN_TOKEN="+testAdminToken, "JOB_HANDLER=http", "JOB_URL="+srv.URL,
			"JOB_ON_FAILURE=dead-letter")
		w := startWorker(t, "cls-http", env...)
		leaderOf(t, 10*time.Second, w)
		enqueueOne(t, env, card)
		poll.Until(t, 15*time.Second, "the job dead-lettered", func() bool { return queueStatus(t, env).DeadLettered == 1 })
		poll.Until(t, 5*time.Second, "the 409 in the replica's record", func() bool {
			for _, rec := range queueStatus(t, env).Replicas {
				if strings.Contains(rec.LastError, card) {
					return true
				}
			}
			return false
		})
		noHandlerOutput(t, w, `"class":"http 422"`, `"lastErrorClass":"http 409"`)
	})
}

// enqueueOne adds one job with the given payload.
func enqueueOne(t *testing.T, env []string, payload string) {
	t.Helper()
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", payload}, env, &out); err != nil {
		t.Fatalf("enqueue: %v\n%s", err, out.String())
	}
}
