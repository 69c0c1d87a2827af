package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortRun runs every part with one replica, two partitions, few jobs
// and short windows, the new daemon standing in for the pre-keys one, so
// the benchmark cannot rot; its figures mean nothing here.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers and replicas")
	}
	bin, err := benchkit.BuildDaemon(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out, progress strings.Builder
	args := []string{"-bin", bin, "-old", bin, "-reps", "1", "-replicas", "1", "-partitions", "2", "-jobs", "40", "-keys", "8",
		"-work", "1ms", "-sweep", "1,2", "-noop-jobs", "200", "-held", "3", "-outage", "300ms", "-outage-keys", "3",
		"-idle-partitions", "2", "-idle-parked", "2", "-idle-window", "500ms", "-idle-settle", "0s"}
	if err := run(t.Context(), args, &out, &progress); err != nil {
		t.Fatalf("%v\n%s\n%s", err, progress.String(), out.String())
	}
	for _, want := range []string{"JOB_CONCURRENCY=2 ÷ pre-keys", "bound the keys allow", "exec handler", "new ÷ pre-keys",
		"other keys' jobs/s, with it", "skip → its 3 held jobs committed", "server back → every job committed",
		"Redis commands/s in all"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Nothing of any part may have broken a key's order.
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "out of order") && !strings.Contains(line, " 0 ") {
			t.Errorf("order broken: %s", line)
		}
	}
}

// TestJobServerCountsDisorder: the job server, which every order figure
// comes from, counts a key's job that arrives after a later one, and a
// repeat, but not a retry after a failure.
func TestJobServerCountsDisorder(t *testing.T) {
	s, err := startJobServer(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.reset(failFirst("k"), "k")
	post := func(key string, rank int) int {
		t.Helper()
		body := `{"key":"` + key + `","rank":` + string(rune('0'+rank)) + `}`
		resp, err := http.Post(s.url, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("k", 0); code != http.StatusInternalServerError {
		t.Fatalf("first job of k: %d, want 500", code)
	}
	for _, rank := range []int{1, 2, 2, 1} {
		post("j", rank)
	}
	_, reordered, repeated := s.counts()
	if reordered != 1 || repeated != 1 {
		t.Errorf("reordered %d, repeated %d; want 1 and 1", reordered, repeated)
	}
	if got := s.ranks("k"); len(got) != 1 || got[0] != 0 {
		t.Errorf("ranks of k: %v, want [0]", got)
	}
	if err := s.down(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Post(s.url, "application/json", bytes.NewBufferString("{}")); err == nil {
		t.Error("a post reached the server while it was down")
	}
	if err := s.up(); err != nil {
		t.Fatal(err)
	}
	if code := post("j", 3); code != http.StatusNoContent {
		t.Errorf("after up: %d, want 204", code)
	}
}
