package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/jobs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortRun runs each part with two replicas and tiny counts, the
// three at once, so the benchmark cannot rot; its figures mean nothing
// here.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers, sentinels and replicas")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH")
	}
	bin, err := benchkit.BuildDaemon(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"-bin", bin, "-reps", "1", "-replicas", "2", "-partitions", "4"}
	for _, tc := range []struct {
		part string
		args []string
		want []string
	}{
		{partDelayed, []string{"-jobs", "200", "-keys", "10", "-spread", "1s", "-lead", "1s"},
			[]string{"jobs started before due", "lateness (start − due), p99", "not in due-time order"}},
		{partIdle, []string{"-idle-jobs", "100", "-schedules", "3", "-every", "1s", "-idle-window", "1s", "-idle-settle", "0s", "-idle-fast"},
			[]string{"Redis commands/s, idle fleet", "added per replica by the delayed jobs and schedules", "schedule ticks run"}},
		{partIdem, []string{"-enqueues", "20", "-send-over", "300ms"},
			[]string{"20 enqueues sent twice at once", "idempotency keys more than one job ran for", "503 answers retried"}},
	} {
		t.Run(tc.part, func(t *testing.T) {
			t.Parallel()
			var out, progress strings.Builder
			args := append(append([]string{"-only", tc.part}, common...), tc.args...)
			if err := run(t.Context(), args, &out, &progress); err != nil {
				t.Fatalf("%v\n%s\n%s", err, progress.String(), out.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestCheckDelayed: the checker counts an early start, a job out of its
// key's due-time order, a tie run against enqueue order, and a repeat.
func TestCheckDelayed(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	// Two keys (job i has key i%2); jobs 0 and 2 of key 0 are due at
	// once (a tie: 0 first), job 4 of key 0 before both.
	due := []time.Time{t0.Add(20 * time.Millisecond), t0, t0.Add(20 * time.Millisecond), t0.Add(10 * time.Millisecond), t0.Add(10 * time.Millisecond)}
	run := func(i int, at time.Duration) delivery {
		return delivery{at: t0.Add(at * time.Millisecond), payload: fmt.Sprintf("0/%d", i), dueAt: jobs.FormatTime(due[i])}
	}
	for _, tc := range []struct {
		name                           string
		runs                           []delivery
		early, keysOut, jobsOut, again int
	}{
		{"in order", []delivery{run(1, 1), run(3, 11), run(4, 12), run(0, 21), run(2, 22)}, 0, 0, 0, 0},
		{"early", []delivery{run(1, 1), run(3, 9), run(4, 12), run(0, 21), run(2, 22)}, 1, 0, 0, 0},
		{"tie against enqueue order", []delivery{run(1, 1), run(3, 11), run(4, 12), run(2, 21), run(0, 22)}, 0, 1, 2, 0},
		{"due order broken", []delivery{run(1, 1), run(3, 11), run(0, 21), run(4, 21), run(2, 22)}, 0, 1, 2, 0},
		{"run twice", []delivery{run(1, 1), run(3, 11), run(4, 12), run(0, 21), run(2, 22), run(2, 30)}, 0, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkDelayed(delayedRound{}, tc.runs, due, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.early != tc.early || got.keysOut != tc.keysOut || got.jobsOut != tc.jobsOut || got.repeated != tc.again || got.ties != 1 {
				t.Errorf("got %d early, %d keys (%d jobs) out of order, %d repeated, %d ties; want %d, %d (%d), %d, 1",
					got.early, got.keysOut, got.jobsOut, got.repeated, got.ties, tc.early, tc.keysOut, tc.jobsOut, tc.again)
			}
		})
	}
}
