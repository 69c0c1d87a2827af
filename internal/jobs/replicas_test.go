package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// waitCalls is how many WAITs the server has run (INFO commandstats).
func waitCalls(t testing.TB, c *redis.Client) int {
	t.Helper()
	for line := range strings.SplitSeq(c.Info(t.Context(), "commandstats").Val(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// acknowledging waits until c's replica acknowledges writes (WAIT says
// so) and INFO replication counts it.
func acknowledging(t testing.TB, c *redis.Client) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the replica acknowledging", func() bool {
		c.Set(t.Context(), keyspace.MustNew("acks-probe").Lease().Lock(), "1", 0)
		n, err := replicas.Online(c.Info(t.Context(), "replication").Val())
		return c.Wait(t.Context(), 1, 100*time.Millisecond).Val() == 1 && err == nil && n == 1
	})
}

func replicatedQueue(t testing.TB, c *redis.Client, min int) *Queue {
	t.Helper()
	q, err := New(Config{Client: c, Keys: keyspace.MustNew("acks").Lease(), MinReplicas: min, ReplicaTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestEnqueueWaitsForReplicas: with a replica online, an enqueue returns
// only once the replica has the job (it can be read there at once), and a
// bulk enqueue sends one WAIT for its whole batch. With REDIS_MIN_REPLICAS
// above the replicas that can acknowledge (one frozen), the enqueue is
// written but not acknowledged: ErrNotReplicated. Without replicas and
// with min 0 nothing waits.
func TestEnqueueWaitsForReplicas(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	alone := replicatedQueue(t, c, 0)
	if _, err := alone.Enqueue(t.Context(), "", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := waitCalls(t, c); n != 0 {
		t.Fatalf("%d WAITs on a master without replicas", n)
	}

	r := redistest.StartReplica(t, s)
	acknowledging(t, c)
	q := replicatedQueue(t, c, 0)
	rq, err := New(Config{Client: r.Client(), Keys: q.cfg.Keys})
	if err != nil {
		t.Fatal(err)
	}
	onReplica := func() []Job {
		jobs, err := rq.Unfinished(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	before := waitCalls(t, c)
	for i := range 20 {
		id, err := q.Enqueue(t.Context(), "", []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		if got := onReplica(); len(got) == 0 || got[len(got)-1].ID != id {
			t.Fatalf("enqueue %d acknowledged before the replica had it", i)
		}
	}
	if n := waitCalls(t, c) - before; n != 20 {
		t.Fatalf("%d WAITs for 20 enqueues", n)
	}
	before = waitCalls(t, c)
	items := make([]Item, 100)
	for i := range items {
		items[i] = Item{Payload: []byte(fmt.Sprint(i))}
	}
	ids, err := q.EnqueueMany(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}
	if n := waitCalls(t, c) - before; n != 1 {
		t.Fatalf("%d WAITs for one bulk enqueue, want 1", n)
	}
	if n := len(onReplica()); n != 21+len(ids) {
		t.Fatalf("the replica has %d jobs after the bulk enqueue was acknowledged, want %d", n, 21+len(ids))
	}

	strict := replicatedQueue(t, c, 2) // one replica can never make two
	id, err := strict.Enqueue(t.Context(), "", []byte("y"))
	if !errors.Is(err, ErrNotReplicated) || id != "" {
		t.Fatalf("enqueue wanting 2 replicas of 1: %q, %v; want ErrNotReplicated", id, err)
	}
	if _, err := strict.EnqueueMany(t.Context(), items[:2]); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("bulk enqueue wanting 2 replicas of 1: %v; want ErrNotReplicated", err)
	}
	if all, err := q.Unfinished(t.Context()); err != nil || len(all) != 21+100+1+2 {
		t.Fatalf("%d jobs on the master (%v): the unacknowledged ones are written all the same", len(all), err)
	}
}

// BenchmarkEnqueueWait is the cost of the WAIT step: an enqueue, and a
// bulk enqueue of 100 jobs, on a master alone and on a master with one
// replica (both on loopback).
func BenchmarkEnqueueWait(b *testing.B) {
	s := redistest.Start(b, redistest.Options{})
	for _, n := range []int{0, 1} {
		if n == 1 {
			redistest.StartReplica(b, s)
			acknowledging(b, s.Client())
		}
		q := replicatedQueue(b, s.Client(), 0)
		none := replicatedQueue(b, s.Client(), -1)
		for _, tc := range []struct {
			name string
			q    *Queue
		}{{"wait", q}, {"nowait", none}} {
			b.Run(fmt.Sprintf("replicas=%d/%s/one", n, tc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := tc.q.Enqueue(b.Context(), "", []byte("payload")); err != nil {
						b.Fatal(err)
					}
				}
			})
			items := make([]Item, 100)
			for i := range items {
				items[i] = Item{Payload: []byte("payload")}
			}
			b.Run(fmt.Sprintf("replicas=%d/%s/bulk100", n, tc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := tc.q.EnqueueMany(b.Context(), items); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
