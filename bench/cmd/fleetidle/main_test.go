package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortRun runs the whole measurement with two replicas and short
// windows, so the benchmark cannot rot; its figures mean nothing here.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and two replicas")
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"-window", "1s", "-replicas", "2"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"2 idle replicas", "the registry (set, zadd, zremrangebyscore):", "an open page:", "evalsha"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
