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
		q, err := New(Config{Client: e.c, Keys: base.Partition(p, n), Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		qs[p] = q
	}
	return qs
}

// entries reads a queue's stream: job ID -> key.
func entries(t *testing.T, q *Queue) map[string]string {
	t.Helper()
	msgs, err := q.cfg.Client.XRange(t.Context(), q.stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range msgs {
		k, _ := m.Values["key"].(string)
		out[m.Values["id"].(string)] = k
	}
	return out
}

// A keyed job lands in the partition its key picks, every job of a key
// in one; an unkeyed one in the partition its ID picks; a batch is one
// transaction over every partition it touches, each partition's jobs in
// their order.
func TestRouterRoutesByKey(t *testing.T) {
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
	// Within a partition the batch's jobs are in batch order.
	for p, q := range qs {
		msgs, _ := q.cfg.Client.XRange(ctx, q.stream, "-", "+").Result()
		var got []string
		for _, m := range msgs {
			if slices.Contains(ids, m.Values["id"].(string)) {
				got = append(got, m.Values["id"].(string))
			}
		}
		if !slices.IsSorted(got) {
			t.Fatalf("partition %d holds the batch out of order: %v", p, got)
		}
	}
}

// A stream key of the wrong type fails that partition's XADDs alone: the
// batch is written in part, and the error says which jobs were.
func TestRouterPartialBatch(t *testing.T) {
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
			e.c.Set(t.Context(), qs[broken].stream, "not a stream", 0)
			_, err := r.EnqueueMany(t.Context(), items)
			var partial *PartialError
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
	e := newEnv(t)
	var mu sync.Mutex
	var seen []Job
	q := e.queue(t, HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		mu.Lock()
		seen = append(seen, j)
		mu.Unlock()
		return errors.New("always")
	}), func(c *WorkerConfig) { c.MaxAttempts = 1 })
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
