package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// post sends a job's write as lockworker's http handler does.
func post(t *testing.T, url, job string, token int64, auth string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/jobs", strings.NewReader("payload of "+job))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(headerJobID, job)
	req.Header.Set(headerToken, strconv.FormatInt(token, 10))
	req.Header.Set(headerAttempt, "1")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func data(t *testing.T, url string) Data {
	t.Helper()
	resp, err := http.Get(url + "/data")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d Data
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// startMain runs the command in-process on a free port, until the test ends.
func startMain(t *testing.T, env map[string]string, args ...string) (url string, logs *tail.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &tail.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", addr}, args...), func(k string) string { return env[k] }, logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	url = "http://" + addr
	poll.Until(t, 5*time.Second, "the store to listen", func() bool {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return url, logs
}

// The fence is the highest token applied: a lower one gets 409 and
// changes nothing, an equal or higher one is applied.
func TestFence(t *testing.T) {
	url, logs := startMain(t, nil)
	for _, tt := range []struct {
		job    string
		token  int64
		status int
	}{
		{"a", 5, 200}, {"b", 3, 409}, {"b", 5, 200}, {"c", 7, 200}, {"a", 6, 409},
	} {
		resp, body := post(t, url, tt.job, tt.token, "")
		if resp.StatusCode != tt.status {
			t.Fatalf("job %s token %d: %d %s, want %d", tt.job, tt.token, resp.StatusCode, body, tt.status)
		}
		if tt.status == 409 && (!strings.Contains(body, `"error":"stale fencing token"`) || resp.Header.Get(headerFence) == "") {
			t.Fatalf("409 answer: %s, fence header %q", body, resp.Header.Get(headerFence))
		}
	}
	d := data(t, url)
	if d.Fences[0] != 7 || d.Applied != 3 || len(d.Records) != 3 || d.Records["a"].Token != 5 || d.Records["b"].Token != 5 {
		t.Fatalf("data %+v", d)
	}
	var tokens []int64
	for _, r := range d.History {
		tokens = append(tokens, r.Token)
	}
	if fmt.Sprint(tokens) != "[5 5 7]" || len(d.Rejected) != 2 || d.Rejected[0].Fence != 5 || d.Rejected[1].Fence != 7 {
		t.Fatalf("history %v, rejected %+v", tokens, d.Rejected)
	}
	if !strings.Contains(logs.String(), "rejected a stale write") {
		t.Fatalf("logs:\n%s", logs)
	}
}

// What lockworker's http handler makes of the store's answers: applied is
// done, a stale token is ErrStaleToken, a bad request is permanent.
func TestLockworkerHandlerAgainstTheStore(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(s, "", slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	h, err := jobs.NewHTTPHandler(jobs.HTTPConfig{URL: srv.URL + "/jobs", WorkerID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.CloseIdleConnections)
	if err := h.Handle(t.Context(), jobs.Job{ID: "j1", Payload: []byte("x"), Attempt: 1}, lease(8)); err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(t.Context(), jobs.Job{ID: "j2", Payload: []byte("x"), Attempt: 1}, lease(7)); !errors.Is(err, jobs.ErrStaleToken) ||
		!strings.Contains(err.Error(), `"fence":8`) {
		t.Fatalf("token 7 after 8: %v, want ErrStaleToken quoting the fence", err)
	}
	if err := h.Handle(t.Context(), jobs.Job{ID: "", Payload: []byte("x")}, lease(9)); !errors.Is(err, jobs.ErrPermanent) {
		t.Fatalf("no job ID: %v, want a permanent failure", err)
	}
	if d := s.Snapshot(); d.Fences[0] != 8 || len(d.Records) != 1 {
		t.Fatalf("data %+v", d)
	}
}

// lease is a lease with token l for a minute from now.
type lease int64

func (l lease) Token() int64        { return int64(l) }
func (l lease) Deadline() time.Time { return time.Now().Add(time.Minute) }
func (l lease) Valid() bool         { return true }

var _ jobs.Lease = lease(0)

func TestBearerToken(t *testing.T) {
	url, _ := startMain(t, map[string]string{"FENCEDSTORE_TOKEN": "store-s3cret"})
	if resp, _ := post(t, url, "a", 1, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", resp.StatusCode)
	}
	if resp, _ := post(t, url, "a", 1, "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("with a wrong token: %d", resp.StatusCode)
	}
	if resp, body := post(t, url, "a", 1, "store-s3cret"); resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %d %s", resp.StatusCode, body)
	}
}

// With a data file the fence survives a restart (a fence that forgets is
// no fence), and a write that cannot be saved leaves neither the write
// nor the raised fence behind.
func TestDataFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "store.json")
	s, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(Write{Job: "a", Token: 9}); err != nil {
		t.Fatal(err)
	}
	again, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if fence, err := again.Apply(Write{Job: "b", Token: 8}); !errors.Is(err, ErrStale) || fence != 9 {
		t.Fatalf("token 8 after a restart with fence 9: %d, %v", fence, err)
	}
	again.file = filepath.Join(t.TempDir(), "gone", "store.json") // cannot be written
	if _, err := again.Apply(Write{Job: "c", Token: 10}); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("unsaved write: %v, want the save's error", err)
	}
	if d := again.Snapshot(); d.Fences[0] != 9 || d.Applied != 1 || len(d.Records) != 1 || len(d.History) != 1 {
		t.Fatalf("after a failed save: %+v, want the state before it", d)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}

func TestBadRequests(t *testing.T) {
	url, _ := startMain(t, nil)
	req, _ := http.NewRequest(http.MethodPost, url+"/jobs", strings.NewReader("x"))
	req.Header.Set(headerJobID, "a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	big, _ := http.NewRequest(http.MethodPost, url+"/jobs", strings.NewReader(strings.Repeat("x", maxPayload+1)))
	big.Header.Set(headerJobID, "a")
	big.Header.Set(headerToken, "1")
	resp, err = http.DefaultClient.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("above 1 MiB: %d", resp.StatusCode)
	}
}

// Each partition has its own leaderships and tokens, so its own fence: a
// partition's low token is not stale because another partition's is
// higher (one fence for all would answer 409 and end a healthy
// leadership), but it is below its own partition's fence.
func TestFencePerPartition(t *testing.T) {
	url, _ := startMain(t, nil)
	for _, tt := range []struct {
		job       string
		partition string
		token     int64
		status    int
	}{
		{"a", "1", 7, 200}, {"b", "2", 3, 200}, {"c", "", 2, 200}, {"d", "1", 6, 409}, {"e", "2", 3, 200}, {"f", "-1", 9, 400}, {"g", "x", 9, 400},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/jobs", strings.NewReader("p"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(headerJobID, tt.job)
		req.Header.Set(headerToken, strconv.FormatInt(tt.token, 10))
		if tt.partition != "" {
			req.Header.Set(headerPart, tt.partition)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Fatalf("job %s partition %q token %d: %d, want %d", tt.job, tt.partition, tt.token, resp.StatusCode, tt.status)
		}
	}
	if d := data(t, url); fmt.Sprint(d.Fences) != "map[0:2 1:7 2:3]" || d.Applied != 4 || len(d.Rejected) != 1 || d.Rejected[0].Partition != 1 {
		t.Fatalf("fences %v, applied %d, rejected %+v", d.Fences, d.Applied, d.Rejected)
	}
}
