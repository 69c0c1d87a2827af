package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortRun runs the whole measurement with small floods, so the
// benchmark cannot rot; its figures mean nothing here.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and two replicas")
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"-conns", "400", "-sources", "1,4"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"400 half-open connections", "1 address(es)  400", "4 address(es)  400"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
