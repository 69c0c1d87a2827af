package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunEveryCell runs the whole program for a handful of operations per
// cell and a tiny idle window, so no cell can rot. It asserts the shape of
// the report, never a timing.
func TestRunEveryCell(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers and lockworker processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (make test installs it)")
	}
	var out, errs bytes.Buffer
	args := []string{"-cell", "30ms", "-warmup", "10ms", "-reps", "2", "-workers", "4", "-redlock-nodes", "3", "-idle", "3s"}
	if err := run(t.Context(), args, &out, &errs); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errs.String())
	}
	report := out.String()
	for _, want := range []string{
		"| scenario", "Machine: nproc",
		"1 node, 1 goroutine", "1 node, 4 goroutines, distinct keys", "Redlock N=3, 1 goroutine", "1 node, 4 clients, one key (contended)",
		"raw PING (1 RTT)", "raw SET NX PX + DEL", "lockworker", "bsm/redislock", "redsync", "Jain",
		"idle leader", "idle follower", "RSS",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// The idle leader polls its queue at least every 2s (the fallback for
	// enqueue notices): in 3s it must have been seen sending commands, or
	// the MONITOR matching by client name broke.
	for line := range strings.Lines(report) {
		if strings.Contains(line, "idle leader") && strings.Contains(line, "0.00 Redis cmd/s") {
			t.Errorf("idle leader sent no commands: %s", line)
		}
	}
}

func TestParseMonitorLine(t *testing.T) {
	for _, tc := range []struct {
		line, addr, cmd string
		ok              bool
	}{
		{`1700000000.123456 [0 127.0.0.1:5555] "evalsha" "abc" "2" "lockworker:leader" "k2" "v"`, "127.0.0.1:5555", "EVALSHA lockworker:leader", true},
		{`1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "abc" "0"`, "127.0.0.1:5555", "EVALSHA", true},
		{`1700000000.123456 [0 lua] "GET" "k"`, "lua", "GET", true},
		{`1700000000.123456 [3 [::1]:6000] "PING"`, "[::1]:6000", "PING", true},
		{`OK`, "", "", false},
	} {
		addr, cmd, ok := parseMonitorLine(tc.line)
		if addr != tc.addr || cmd != tc.cmd || ok != tc.ok {
			t.Errorf("parseMonitorLine(%q) = %q, %q, %v; want %q, %q, %v", tc.line, addr, cmd, ok, tc.addr, tc.cmd, tc.ok)
		}
	}
}

func TestFigures(t *testing.T) {
	ms := time.Millisecond
	s := sample{elapsed: time.Second, lat: []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}, perWorker: []int{1, 3}, attempts: 8}
	f := summarize([]sample{s})
	if f.opsPerSec != 4 || f.p50 != 2*ms || f.p99 != 4*ms || f.attemptsPerWin != 2 {
		t.Errorf("summarize = %+v", f)
	}
	if got := jain([]int{5, 5, 5}); got != 1 {
		t.Errorf("jain even = %v, want 1", got)
	}
	if got := jain([]int{6, 0, 0}); got != 1.0/3 {
		t.Errorf("jain one winner = %v, want 1/3", got)
	}
}
