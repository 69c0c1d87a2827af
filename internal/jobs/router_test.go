package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// partitionQueues builds the queues of n partitions of one LOCK_KEY.
func partitionQueues(t *testing.T, e *env, n int) []*Queue {
	t.Helper()
	base := keyspace.MustNew("lockworker:leader")
	qs := make([]*Queue, n)
	for p := range qs {
		q, err := New(Config{Client: e.c, Keys: base.Partition(p, n), Partition: p, Partitions: n})
		if err != nil {
			t.Fatal(err)
		}
		qs[p] = q
	}
	return qs
}

// entries reads a queue's unfinished jobs: job ID -> key.
func entries(t *testing.T, q *Queue) map[string]string {
	t.Helper()
	jobs, err := q.Unfinished(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, j := range jobs {
		out[j.ID] = j.Key
	}
	return out
}

// A keyed job lands in the partition its key picks, every job of a key
// in one group; an unkeyed one in the partition its ID picks, a group of
// its own; a batch is one script over every partition it touches, each
// key's jobs in their order.
func TestRouterRoutesByKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	qs := partitionQueues(t, e, 8)
	r, err := NewRouter(qs, e.c, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 40 {
		key := fmt.Sprintf("customer-%d", i%10)
		id, p, err := r.Enqueue(ctx, key, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if want := partition.Of(key, 8); p != want {
			t.Fatalf("%s went to partition %d, want %d", key, p, want)
		}
		if got, ok := entries(t, qs[p])[id]; !ok || got != key {
			t.Fatalf("job %s of %s not in partition %d's stream with its key (%q)", id, key, p, got)
		}
	}
	id, p, err := r.Enqueue(ctx, "", []byte("unkeyed"))
	if err != nil || p != partition.Of(id, 8) {
		t.Fatalf("unkeyed job %s in partition %d, %v; want partition.Of(its ID) = %d", id, p, err, partition.Of(id, 8))
	}

	var items []Item
	for i := range 30 {
		items = append(items, Item{Key: fmt.Sprintf("acct-%d", i%5), Payload: fmt.Appendf(nil, "%d", i)})
	}
	ids, err := r.EnqueueMany(ctx, items)
	if err != nil || len(ids) != 30 {
		t.Fatalf("EnqueueMany: %d IDs, %v", len(ids), err)
	}
	for i, it := range items {
		p := partition.Of(it.Key, 8)
		if entries(t, qs[p])[ids[i]] != it.Key {
			t.Fatalf("batch item %d (%s) not in partition %d", i, it.Key, p)
		}
	}
	// Within a key the batch's jobs are in batch order.
	for p, q := range qs {
		jobs, err := q.Unfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string][]string{}
		for _, j := range jobs {
			if slices.Contains(ids, j.ID) {
				byKey[j.Key] = append(byKey[j.Key], j.ID)
			}
		}
		for k, got := range byKey {
			if !slices.IsSorted(got) {
				t.Fatalf("partition %d holds key %s's jobs out of order: %v", p, k, got)
			}
		}
	}
	if m := qs[p].member("", id); m != "j:"+id {
		t.Fatalf("an unkeyed job of a partitioned queue is in group %q, want its own", m)
	}
}

// A key of the wrong type in one partition: with one script for the
// whole batch (oneTx) nothing is written; with one per partition (Redis
// Cluster) that partition's part alone fails, and the error says which
// jobs were written.
func TestRouterPartialBatch(t *testing.T) {
	t.Parallel()
	for _, oneTx := range []bool{true, false} {
		t.Run(fmt.Sprint("oneTx=", oneTx), func(t *testing.T) {
			e := newEnv(t)
			qs := partitionQueues(t, e, 4)
			r, _ := NewRouter(qs, e.c, oneTx)
			var items []Item
			for i := range 20 {
				items = append(items, Item{Key: fmt.Sprintf("k%d", i), Payload: []byte("x")})
			}
			broken := partition.Of("k0", 4)
			e.c.Set(t.Context(), qs[broken].ready, "not a sorted set", 0)
			_, err := r.EnqueueMany(t.Context(), items)
			var partial *PartialError
			if oneTx {
				if err == nil || errors.As(err, &partial) || errors.Is(err, ErrOutcomeUnknown) {
					t.Fatalf("EnqueueMany = %v, want a refusal of the whole batch", err)
				}
				for p, q := range qs {
					if p == broken {
						continue
					}
					if n := len(entries(t, q)); n != 0 {
						t.Fatalf("partition %d holds %d jobs of a refused batch", p, n)
					}
				}
				return
			}
			if !errors.As(err, &partial) {
				t.Fatalf("EnqueueMany = %v, want a PartialError", err)
			}
			for i, it := range items {
				p := partition.Of(it.Key, 4)
				if p == broken {
					if partial.IDs[i] != "" {
						t.Fatalf("item %d of the broken partition reported enqueued", i)
					}
					continue
				}
				if _, there := entries(t, qs[p])[partial.IDs[i]]; partial.IDs[i] == "" || !there {
					t.Fatalf("item %d of partition %d not reported or not there", i, p)
				}
			}
		})
	}
}

// A job's key reaches its handler, with its partition; a dead letter
// keeps it, and a requeue puts it back under the same key.
func TestKeyTravelsWithTheJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var seen []Job
	q := e.queue(t, HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		mu.Lock()
		seen = append(seen, j)
		mu.Unlock()
		return errors.New("always")
	}), func(c *WorkerConfig) { c.MaxAttempts = 1; c.OnFailure = FailureDeadLetter })
	id, err := q.Enqueue(t.Context(), "order-42", []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	var dead []DeadLetter
	poll.Until(t, 20*time.Second, "the dead letter", func() bool {
		dead, err = q.DeadLetters(t.Context(), 0)
		return err == nil && len(dead) == 1
	})
	_ = stop()
	mu.Lock()
	if len(seen) == 0 || seen[0].Key != "order-42" || seen[0].ID != id {
		t.Fatalf("handler saw %+v, want job %s with key order-42", seen, id)
	}
	mu.Unlock()
	if dead[0].Key != "order-42" {
		t.Fatalf("dead letter %+v lost its key", dead[0])
	}
	newID, err := q.Requeue(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if k := entries(t, q.Queue)[newID]; k != "order-42" {
		t.Fatalf("requeued job has key %q, want order-42", k)
	}
}

// A key too long or with a control character is refused, with nothing
// enqueued.
func TestKeyChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error { return nil }), nil)
	for key, want := range map[string]error{string(make([]byte, MaxKey+1)): ErrKeyTooLong, "a\nb": ErrKeyInvalid, "a\x7fb": ErrKeyInvalid} {
		if _, err := q.Enqueue(t.Context(), key, []byte("x")); !errors.Is(err, want) {
			t.Errorf("key %q: %v, want %v", key, err, want)
		}
		if _, err := q.EnqueueMany(t.Context(), []Item{{Payload: []byte("ok")}, {Key: key, Payload: []byte("x")}}); !errors.Is(err, want) {
			t.Errorf("batch with key %q: %v, want %v", key, err, want)
		}
	}
	if n := stats(t, q).Pending; n != 0 {
		t.Fatalf("%d jobs enqueued by refused calls", n)
	}
}
