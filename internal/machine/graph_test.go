package machine

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
)

var update = flag.Bool("update", false, "rewrite testdata/chart.dot and chart.mmd from the chart")

// TestGraphGolden holds the DOT and Mermaid pictures of the chart; a
// change to the chart shows up as a diff here (go test -update to accept
// it).
func TestGraphGolden(t *testing.T) {
	for format, file := range map[Format]string{FormatDOT: "chart.dot", FormatMermaid: "chart.mmd"} {
		t.Run(format.String(), func(t *testing.T) { golden(t, format, file) })
	}
}

func golden(t *testing.T, format Format, file string) {
	t.Helper()
	got, err := Chart(format)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Graph(%v) differs from %s (go test -update to accept):\n%s", format, golden, got)
	}
}

func TestGraphMermaid(t *testing.T) {
	got, err := Chart(FormatMermaid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "stateDiagram-v2\n") {
		t.Errorf("not a stateDiagram-v2:\n%s", got)
	}
	for _, s := range States() {
		if !strings.Contains(got, "    "+s.String()+"\n") {
			t.Errorf("state %v missing:\n%s", s, got)
		}
	}
	for _, line := range []string{
		"[*] --> idle",
		"idle --> acquiring_lock : TRY_ACQUIRE_LOCK",
		"acquiring_lock --> working : LOCK_ACQUIRED / startWork",
		"waiting_to_acquire_lock --> acquiring_lock : RELEASE_NOTICE",
		"releasing_lock --> idle : LOCK_RELEASED [stopping]",
		"releasing_lock --> waiting_to_acquire_lock : LOCK_RELEASED [rejoining]",
		"working --> cleanup : WORK_ENDED",
		"renew_lock --> cleanup : WORK_ENDED",
		"renew_lock : entry / renew",
	} {
		if !strings.Contains(got, "    "+line+"\n") {
			t.Errorf("line %q missing:\n%s", line, got)
		}
	}
	// One edge per permitted transition; ignored triggers are not edges.
	if n := strings.Count(got, " --> ") - 1; n != 20 {
		t.Errorf("%d transitions, want 20:\n%s", n, got)
	}
	if strings.Contains(got, "cleanup --> cleanup") || strings.Contains(got, "pause_work --> pause_work") {
		t.Errorf("an ignored trigger was drawn as a transition:\n%s", got)
	}
}

// TestGraphFormats: a format is read and written by its name; an unknown
// name is refused with the two there are, and so is a Format out of range.
func TestGraphFormats(t *testing.T) {
	for _, f := range []Format{FormatDOT, FormatMermaid} {
		var back Format
		text, err := f.MarshalText()
		if err != nil || back.UnmarshalText(text) != nil || back != f {
			t.Errorf("%v: marshalled %q (%v), read back %v", f, text, err, back)
		}
	}
	var f Format
	if err := f.UnmarshalText([]byte("svg")); err == nil || err.Error() != `want dot or mermaid, got "svg"` {
		t.Errorf("UnmarshalText(svg) = %v", err)
	}
	if _, err := Chart(Format(7)); err == nil || !strings.Contains(err.Error(), "unknown graph format Format(7)") {
		t.Errorf("Chart(Format(7)) error = %v", err)
	}
}

// TestGraphWhileRunning: Graph builds its own stateless machine, so it is
// safe (and the same) while Run is firing; -race checks the first claim.
func TestGraphWhileRunning(t *testing.T) {
	want, err := Chart(FormatDOT)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start(t.Context())
		for range 3 {
			got, err := h.m.Graph(FormatDOT)
			if err != nil || got != want {
				t.Fatalf("Graph while running differs from Chart (err %v)", err)
			}
		}
		h.next(h.acquire, "Acquire").reply(nil)
		h.m.Stop()
		h.stopThroughCleanup()
	})
}
