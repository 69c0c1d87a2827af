package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// history runs `lockworker history --json`.
func historyOf(t *testing.T, env []string) []historyReport {
	t.Helper()
	var out strings.Builder
	if err := runCLI(t, []string{"history", "--json"}, env, &out); err != nil {
		t.Fatalf("history: %v\n%s", err, out.String())
	}
	var h []historyReport
	if err := json.Unmarshal([]byte(out.String()), &h); err != nil {
		t.Fatalf("history --json: %v\n%s", err, out.String())
	}
	return h
}

// waitEnded waits for a new leadership whose predecessor ended for reason.
func waitEnded(t *testing.T, env []string, after int64, reason string) historyReport {
	t.Helper()
	var newest historyReport
	poll.Until(t, 15*time.Second, "a leadership after a "+reason+" one", func() bool {
		h := historyOf(t, env)
		if len(h) == 0 || h[0].Token <= after {
			return false
		}
		newest = h[0]
		return true
	})
	if newest.PreviousEnded != reason {
		t.Fatalf("newest leadership %+v: previous ended %q, want %q", newest, newest.PreviousEnded, reason)
	}
	return newest
}

// TestFleetRegistryAndHistory: `status` lists the live replicas with what
// they do; a replica killed with -9 drops out once its record's TTL ran
// out; the history says how each leadership ended: released (SIGTERM),
// stepped_down (`lockworker stepdown`), lease_expired (kill -9), fenced
// (the epoch raised past the leader's token). Pause and resume show in
// status, /status and the metrics.
func TestFleetRegistryAndHistory(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL()) // RENEW_INTERVAL=400ms: records live 1.2s
	ws := []*worker{startWorker(t, "fleet-1", env...)}
	leaderOf(t, 10*time.Second, ws[0])
	ws = append(ws, startWorker(t, "fleet-2", env...), startWorker(t, "fleet-3", env...))
	poll.Until(t, 10*time.Second, "three replicas in the registry, one leading, two waiting", func() bool {
		n := 0
		for _, rec := range queueStatus(t, env).Replicas {
			if rec.State == "working" || rec.State == "waiting_to_acquire_lock" {
				n++
			}
		}
		return n == 3
	})

	st := queueStatus(t, env)
	for _, rec := range st.Replicas {
		if rec.Leader != (rec.WorkerID == "fleet-1") || rec.Host == "" || rec.PID == 0 || rec.Version == "" || rec.Since.IsZero() {
			t.Errorf("record %+v", rec)
		}
		if rec.Leader && (rec.Token != st.Token || rec.State != "working") {
			t.Errorf("leader's record %+v, lock token %d", rec, st.Token)
		}
	}
	var text strings.Builder
	if err := runCLI(t, []string{"status"}, env, &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "replicas (3 live)") || !strings.Contains(text.String(), "fleet-3") {
		t.Errorf("status lacks the replicas:\n%s", text.String())
	}

	// kill -9 of a follower: its record expires.
	ws[2].signal(syscall.SIGKILL)
	killed := time.Now()
	poll.Until(t, 10*time.Second, "the killed replica dropping out", func() bool { return len(queueStatus(t, env).Replicas) == 2 })
	t.Logf("a killed replica dropped out of the registry %v after kill -9 (records live 3 x 400ms)", time.Since(killed).Round(time.Millisecond))
	ws[2] = startWorker(t, "fleet-4", env...)

	first := historyOf(t, env)
	if len(first) != 1 || first[0].WorkerID != "fleet-1" || first[0].PreviousEnded != "" {
		t.Fatalf("history %+v, want fleet-1's first leadership", first)
	}
	ws[0].signal(syscall.SIGTERM)
	e := waitEnded(t, env, first[0].Token, "released")
	if e.PreviousWorkerID != "fleet-1" || e.HandoverMs == nil {
		t.Errorf("after SIGTERM: %+v", e)
	}
	poll.Until(t, 5*time.Second, "fleet-1's record removed on its way out", func() bool {
		for _, rec := range queueStatus(t, env).Replicas {
			if rec.WorkerID == "fleet-1" {
				return false
			}
		}
		return true
	})

	var out strings.Builder
	if err := runCLI(t, []string{"stepdown"}, env, &out); err != nil {
		t.Fatalf("stepdown: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "stepped down;") {
		t.Errorf("stepdown printed %q", out.String())
	}
	t.Logf("stepdown: %s", strings.TrimSpace(out.String()))
	e = waitEnded(t, env, e.Token, "stepped_down")

	lead := leaderOf(t, 5*time.Second, ws[1:]...)
	lead.signal(syscall.SIGKILL)
	e = waitEnded(t, env, e.Token, "lease_expired")
	if e.HandoverMs != nil {
		t.Errorf("a handover after a crash has no end record to time from: %+v", e)
	}

	out.Reset()
	raise := strconv.FormatInt(queueStatus(t, env).Epoch+100, 10)
	if err := runCLI(t, []string{"epoch", "--raise-to", raise}, env, &out); err != nil {
		t.Fatalf("epoch: %v\n%s", err, out.String())
	}
	waitEnded(t, env, e.Token, "fenced")

	pauseShows(t, env, ws...)
}

// pauseShows: pause and resume change status, /status and the metrics.
func pauseShows(t *testing.T, env []string, ws ...*worker) {
	t.Helper()
	var live *worker
	for _, w := range ws {
		if _, ok := w.status(); ok {
			live = w
		}
	}
	for _, step := range []struct {
		cmd    string
		paused bool
	}{{"pause", true}, {"resume", false}} {
		var out strings.Builder
		if err := runCLI(t, []string{step.cmd}, env, &out); err != nil {
			t.Fatalf("%s: %v\n%s", step.cmd, err, out.String())
		}
		if queueStatus(t, env).Paused != step.paused {
			t.Errorf("after %s, status says paused=%v", step.cmd, !step.paused)
		}
		var s struct {
			Queue struct{ Paused bool } `json:"queue"`
		}
		if err := json.Unmarshal([]byte(get(t, live.url("/status"))), &s); err != nil || s.Queue.Paused != step.paused {
			t.Errorf("after %s, /status says paused=%v (%v)", step.cmd, s.Queue.Paused, err)
		}
		want := fmt.Sprintf("lockworker_queue_paused %d", map[bool]int{true: 1, false: 0}[step.paused])
		if m := get(t, live.url("/metrics")); !strings.Contains(m, want) {
			t.Errorf("after %s, /metrics lacks %q", step.cmd, want)
		}
	}
}
