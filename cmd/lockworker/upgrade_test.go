package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestUpgradeFromUntaggedKeys is a rolling update from a version before
// hash tags: while the older leader holds the old lock, the new replica
// is ready (so the rollout goes on) but does not lead; once the older one
// is gone, the new one moves the keys, leads with a token above the old
// epoch, and processes the jobs the older version left pending.
func TestUpgradeFromUntaggedKeys(t *testing.T) {
	r := redistest.Start(t, redistest.Options{})
	ctx := t.Context()
	// The older version: the same lock and queue code under the old names.
	old, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{r.Client()}, Key: "lockworker:leader", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	oldQueue, err := jobs.New(jobs.Config{Client: r.Client(), Prefix: "lockworker:leader:jobs", EpochKey: "lockworker:leader:epoch"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if lease, err := old.Acquire(ctx, "old"); err == nil {
			_ = old.Release(ctx, lease)
		}
	}
	held, err := old.Acquire(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := oldQueue.Enqueue(ctx, fmt.Appendf(nil, "pending-%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	w := startWorker(t, "upgraded", fastEnv(r.URL())...)
	poll.Until(t, 10*time.Second, "the new replica waiting for the older leader", func() bool {
		return strings.Contains(w.out.String(), "an older lockworker leads")
	})
	if code := readyz(w); code != http.StatusOK || len(leaders(w)) != 0 {
		t.Fatalf("while the older version leads: /readyz %d, leaders %d; want 200 and none", code, len(leaders(w)))
	}

	_ = old.Release(ctx, held) // the older replica stops
	poll.Until(t, 10*time.Second, "the new replica leads", func() bool { return len(leaders(w)) == 1 })
	if s, _ := w.status(); s.Token <= held.Token() || !strings.Contains(w.out.String(), "moved the keys of an older lockworker") {
		t.Fatalf("token %d after the older epoch %d, or no move logged:\n%s", s.Token, held.Token(), w.out.String())
	}
	poll.Until(t, 10*time.Second, "the older version's pending jobs done", func() bool {
		st := queueStatus(t, fastEnv(r.URL()))
		return st.Committed == 3 && st.Pending == 0
	})
}

func readyz(w *worker) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", w.port))
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
