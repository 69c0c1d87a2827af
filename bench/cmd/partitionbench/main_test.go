package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortRun runs every part with two replicas, few partitions, few
// jobs and a short idle window, so the benchmark cannot rot; its figures
// mean nothing here.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers and replicas")
	}
	var out, progress strings.Builder
	args := []string{"-reps", "1", "-replicas", "2", "-partitions", "4", "-jobs", "40", "-keys", "8", "-work", "1ms",
		"-noop-jobs", "500", "-idle-partitions", "4", "-idle-window", "1s", "-idle-settle", "0s"}
	if err := run(t.Context(), args, &out, &progress); err != nil {
		t.Fatalf("%v\n%s\n%s", err, progress.String(), out.String())
	}
	for _, want := range []string{"PARTITIONS=4 ÷ PARTITIONS=1", "best the key hash allows", "Redis CPU per job",
		"each of its partitions working elsewhere", "every partition owned again", "partitions moved by a join",
		"Redis commands/s in all"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseMove(t *testing.T) {
	for _, tc := range []struct {
		line     string
		ok       bool
		acquired bool
	}{
		{`{"time":"2026-11-27T08:00:00Z","msg":"transition","partition":3,"from":"acquiring_lock","to":"working"}`, true, true},
		{`{"time":"2026-11-27T08:00:00Z","msg":"transition","partition":3,"from":"renew_lock","to":"working"}`, false, false},
		{`{"time":"2026-11-27T08:00:00Z","msg":"transition","partition":3,"from":"working","to":"cleanup"}`, true, false},
		{`{"time":"2026-11-27T08:00:00Z","msg":"transition","partition":3,"from":"renew_lock","to":"pause_work"}`, true, false},
		{`{"time":"2026-11-27T08:00:00Z","msg":"transition","from":"acquiring_lock","to":"working"}`, false, false},
		{`not json`, false, false},
	} {
		m, ok := parseMove([]byte(tc.line))
		if ok != tc.ok || (ok && (m.acquired != tc.acquired || m.partition != 3)) {
			t.Errorf("%s: got %+v, %v", tc.line, m, ok)
		}
	}
}
