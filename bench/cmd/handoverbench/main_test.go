package main

import (
	"bytes"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/fleet"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestLineWriterReadsTransitions feeds the writer the daemon's log format
// (slog JSON with workerId), cut at awkward places, among other lines.
func TestLineWriterReadsTransitions(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil)).With("workerId", "w1")
	log.Info("lockworker starting", "port", 3000)
	log.Info("transition", "from", "waiting_to_acquire_lock", "to", "acquiring_lock", "trigger", "RELEASE_NOTICE")
	buf.WriteString("panic: not json\n")
	log.Info("transition", "from", "acquiring_lock", "to", "working", "trigger", "LOCK_ACQUIRED")
	log.Info("transition", "from", "working", "to", "cleanup", "trigger", "STOP") // no newline yet: see below
	out := buf.Bytes()
	out = out[:len(out)-1]

	rec := newRecorder()
	w := rec.writer("r1")
	for _, cut := range [][]byte{out[:7], out[7:100], out[100:101], out[101:]} {
		if _, err := w.Write(cut); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.since(0)
	if len(got) != 2 {
		t.Fatalf("got %d transitions, want 2 (the last line is unfinished): %+v", len(got), got)
	}
	_, _ = io.WriteString(w, "\n")
	got = rec.since(0)
	want := []transition{
		{replica: "r1", from: "waiting_to_acquire_lock", to: "acquiring_lock", trigger: "RELEASE_NOTICE"},
		{replica: "r1", from: "acquiring_lock", to: "working", trigger: "LOCK_ACQUIRED"},
		{replica: "r1", from: "working", to: "cleanup", trigger: "STOP"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d transitions, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		if g.at.IsZero() {
			t.Errorf("transition %d has no time", i)
		}
		g.at = time.Time{}
		if g != want[i] {
			t.Errorf("transition %d = %+v, want %+v", i, g, want[i])
		}
	}
	if tr, ok := rec.lastBefore(2, func(t transition) bool { return t.to == "acquiring_lock" }); !ok || tr.trigger != "RELEASE_NOTICE" {
		t.Errorf("lastBefore = %+v, %v", tr, ok)
	}
	if tr, i, err := rec.await(t.Context(), 0, func(t transition) bool { return t.to == "cleanup" }); err != nil || i != 2 || tr.trigger != "STOP" {
		t.Errorf("await = %+v, %d, %v", tr, i, err)
	}
}

func TestParseTransitionRejectsOtherLines(t *testing.T) {
	for _, line := range []string{
		``,
		`not json`,
		`{"time":"2026-01-02T03:04:05.123456789Z","msg":"Renewing lock"}`,
		`{"time":"2026-01-02T03:04:05Z","msg":"transition"}`,
		`{"time":"yesterday","msg":"transition","to":"working"}`,
	} {
		if tr, ok := parseTransition([]byte(line)); ok {
			t.Errorf("parseTransition(%q) = %+v, want no transition", line, tr)
		}
	}
	tr, ok := parseTransition([]byte(`{"time":"2026-01-02T03:04:05.123456789+01:00","level":"INFO","msg":"transition","workerId":"a","from":"acquiring_lock","to":"working","trigger":"LOCK_ACQUIRED"}`))
	want := time.Date(2026, 1, 2, 2, 4, 5, 123456789, time.UTC)
	if !ok || !tr.at.Equal(want) || tr.to != "working" {
		t.Errorf("got %+v, %v; want to=working at %s", tr, ok, want)
	}
}

func TestSummarize(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	seq := func(n int) []time.Duration { // n..1 ms, unsorted on purpose
		var ds []time.Duration
		for i := n; i >= 1; i-- {
			ds = append(ds, time.Duration(i)*time.Millisecond)
		}
		return ds
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want summary
	}{
		{"empty", nil, summary{}},
		{"one", ms(7), summary{n: 1, min: ms(7)[0], p50: ms(7)[0], p99: ms(7)[0], max: ms(7)[0]}},
		{"two", ms(9, 3), summary{n: 2, min: ms(3)[0], p50: ms(3)[0], p99: ms(9)[0], max: ms(9)[0]}},
		{"twenty: p99 is the max", seq(20), summary{n: 20, min: ms(1)[0], p50: ms(10)[0], p99: ms(20)[0], max: ms(20)[0]}},
		{"hundred: p99 is the 99th", seq(100), summary{n: 100, min: ms(1)[0], p50: ms(50)[0], p99: ms(99)[0], max: ms(100)[0]}},
		{"thousand", seq(1000), summary{n: 1000, min: ms(1)[0], p50: ms(500)[0], p99: ms(990)[0], max: ms(1000)[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSmoke runs two graceful and two crash handovers on each topology
// and one forced Redis failover on Sentinel and Cluster, and checks that
// each handover moved leadership to another replica and each failover
// was followed by a commit. Speed is reported by the command, never
// asserted here. The topologies run at once, each with its own fleet.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and lockworker processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	bin, err := benchkit.BuildDaemon(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := options{rounds: 2, replicas: 3, ttl: 2 * time.Second, renew: 500 * time.Millisecond,
		retry: time.Second, bin: bin, notices: []bool{true}, modes: []string{standalone, sentinel, rcluster}, failovers: 1}
	var (
		mu      sync.Mutex
		results []result
	)
	ok := t.Run("topologies", func(t *testing.T) {
		for _, mode := range o.modes {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				one := o
				one.modes = []string{mode}
				var progress bytes.Buffer
				res, err := measure(t.Context(), one, &fleet.LockedWriter{W: &progress})
				t.Log("\n" + progress.String())
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 1 {
					t.Fatalf("%d results, want 1", len(res))
				}
				checkSmoke(t, o, res[0])
				mu.Lock()
				results = append(results, res...)
				mu.Unlock()
			})
		}
	})
	if !ok {
		return
	}
	if len(results) != len(o.modes) {
		t.Fatalf("%d results, want %d", len(results), len(o.modes))
	}
	var report bytes.Buffer
	reportTo(&report, o, results, 0)
	t.Log("\n" + report.String())
}

// checkSmoke checks one topology's result: each handover moved leadership
// to another replica, woken by something, and each failover was followed
// by a commit.
func checkSmoke(t *testing.T, o options, res result) {
	t.Helper()
	for _, k := range []kind{graceful, crash} {
		ss := res.samples[k]
		if len(ss) != o.rounds {
			t.Errorf("%s %s: %d samples, want %d", res.mode, k, len(ss), o.rounds)
		}
		for _, s := range ss {
			if s.to == "" || s.to == s.from || s.wokenBy == "" {
				t.Errorf("%s %s: %+v is not a handover to another replica", res.mode, k, s)
			}
		}
	}
	if want := min(o.failovers, boolInt(res.mode != standalone)); len(res.failovers) != want {
		t.Errorf("%s: %d failovers, want %d", res.mode, len(res.failovers), want)
	}
	for _, s := range res.failovers {
		if s.commit < s.promoted || s.promoted <= 0 {
			t.Errorf("%s: failover %+v: no commit after the promotion", res.mode, s)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
