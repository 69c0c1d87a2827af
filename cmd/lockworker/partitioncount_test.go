package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestPartitionCountDefended: the recorded partition count cannot be
// bypassed. With it deleted under a live PARTITIONS=8 fleet, a replica
// with PARTITIONS=4 is refused by the registry's records (exit 2 naming
// both counts); after FLUSHALL (count and records gone) a replica with 4,
// and one with 1, are refused too; the fleet records its count again,
// says so, and its commands keep working.
func TestPartitionCountDefended(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := partitionsEnv(r.URL(), 8, t.TempDir())
	a := startWorker(t, "pc-a", env...)
	b := startWorker(t, "pc-b", env...)
	shared(t, 8, 30*time.Second, a, b)
	countKey := keys(t).Partitions()
	recorded := func() string { return r.Client().Get(t.Context(), countKey).Val() }

	if err := r.Client().Del(t.Context(), countKey).Err(); err != nil {
		t.Fatal(err)
	}
	four := startWorker(t, "pc-four", append(env, "PARTITIONS=4")...)
	exitsTwo(t, four, "PARTITIONS: 4, but the fleet of this LOCK_KEY runs with 8")
	poll.Until(t, 10*time.Second, "the fleet recording 8 again", func() bool { return recorded() == "8" })
	poll.Until(t, 5*time.Second, "a replica saying it recorded the count again", func() bool {
		return strings.Contains(a.out.String()+b.out.String(), "the partition count had vanished from Redis")
	})

	for _, p := range []int{4, 1} {
		if err := r.Client().FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		w := startWorker(t, fmt.Sprint("pc-after-flush-", p), append(env, fmt.Sprint("PARTITIONS=", p))...)
		exitsTwo(t, w, fmt.Sprintf("PARTITIONS: %d, but the fleet of this LOCK_KEY runs with 8", p))
		poll.Until(t, 10*time.Second, "the fleet recording 8 again after FLUSHALL", func() bool { return recorded() == "8" })
	}
	if parts := partitionsJSON(t, env); len(parts) != 8 {
		t.Fatalf("lockworker partitions with PARTITIONS=8 after the flushes: %d partitions", len(parts))
	}
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", "--key", "x", "y"}, append(env, "PARTITIONS=4"), &out); err == nil ||
		!strings.Contains(err.Error(), "runs with 8") {
		t.Fatalf("enqueue with PARTITIONS=4 after the flushes: %v", err)
	}
	shared(t, 8, 30*time.Second, a, b)
}
