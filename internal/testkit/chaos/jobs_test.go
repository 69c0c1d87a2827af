package chaos_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/chaos"
	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// TestThousandJobsAcrossLeaderChanges: 1000 jobs through three real
// replicas on one redis-server; the leader is SIGKILLed after 300 commits
// and the next one SIGTERMed after 600. Every job's effect, written through
// the fenced store by the exec handler's command, appears exactly once and
// in enqueue order (a redo of the job in flight at a leader change is the
// same effect: the store's consumers dedupe on the job ID), and the history
// has no violation.
func TestThousandJobsAcrossLeaderChanges(t *testing.T) {
	t.Parallel()
	const n = 1000
	ctx := t.Context()
	coord, err := chaos.NewCoordinator(fencecheck.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = coord.Close() })
	cfg := cluster(t)
	cfg.Nodes, cfg.Work, cfg.Batch = 1, time.Millisecond, 16
	c, err := chaos.StartCluster(ctx, cfg, coord)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	q, err := c.Queue()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := q.Enqueue(ctx, "", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	committed := func() int64 {
		s, err := q.Stats(ctx)
		if err != nil {
			return -1
		}
		return s.Committed
	}
	waitCommitted := func(k int64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for committed() < k {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d jobs committed after %s", committed(), k, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	waitCommitted(300, 2*time.Minute)
	killed, err := c.SignalLeader(ctx, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	waitCommitted(600, 2*time.Minute)
	stopped, err := c.SignalLeader(ctx, syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	if stopped == killed {
		t.Fatalf("%s led again after kill -9", killed)
	}
	waitCommitted(n, 2*time.Minute)
	c.StopWorkers(context.WithoutCancel(ctx))

	history := coord.Store().History()
	if v := fencecheck.CheckBatch(history, n, cfg.Batch); len(v) > 0 {
		t.Fatalf("%d violation(s), first: %v", len(v), v[0])
	}
	seen := map[string]bool{}
	var effects []int
	tokens := map[int64]bool{}
	for _, r := range history {
		if !r.Accepted || seen[r.JobID] {
			continue
		}
		seen[r.JobID] = true
		effects = append(effects, r.Seq)
		tokens[r.Token] = true
	}
	if len(effects) != n {
		t.Fatalf("%d distinct job effects, want %d", len(effects), n)
	}
	for i, seq := range effects {
		if seq != i {
			t.Fatalf("effect %d is job %d: want enqueue order", i, seq)
		}
	}
	if len(tokens) < 3 {
		t.Fatalf("effects under %d token(s); the kill and the SIGTERM should have made 3 leaderships", len(tokens))
	}
	accepted, rejected := coord.Store().Counts()
	t.Logf("%d jobs, %d writes accepted (%d redone at a leader change), %d rejected, %d leaderships; killed %s, stopped %s",
		n, accepted, accepted-n, rejected, len(tokens), killed, stopped)
}
