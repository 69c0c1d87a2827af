package jobs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// Senders that enqueue one job with one idempotency key at the same time
// get one job, and every one of them its ID: the check is in the script
// that appends. Keyless, the job goes to the partition its idempotency
// key picks, so the senders meet there.
func TestIdempotentEnqueueConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := keyspace.MustNew("lockworker:leader")
	var queues []*Queue
	for p := range 4 {
		q, err := New(Config{Client: e.c, Keys: base.Partition(p, 4), Partition: p, Partitions: 4})
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	r, err := NewRouter(queues, e.c, true)
	if err != nil {
		t.Fatal(err)
	}
	const senders = 16
	got := make([]Receipt, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			var err error
			if got[i], err = r.EnqueueItem(context.Background(), Item{Payload: []byte("pay once"), IdempotencyKey: "order-17"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fresh := 0
	for _, rc := range got {
		if rc.ID != got[0].ID || rc.Partition != got[0].Partition {
			t.Fatalf("receipts %+v: want one ID", got)
		}
		if !rc.Existing {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d senders enqueued, want 1", fresh)
	}
	parts, err := r.PartitionStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, p := range parts {
		total += p.Pending
	}
	if total != 1 {
		t.Fatalf("%d jobs pending, want 1", total)
	}
	// In one batch too: the second line with a key the first holds is a
	// duplicate of it.
	rs, err := r.EnqueueItems(t.Context(), []Item{
		{Payload: []byte("a"), IdempotencyKey: "k1"}, {Payload: []byte("b"), IdempotencyKey: "k1"},
		{Payload: []byte("c"), IdempotencyKey: "order-17"}, {Payload: []byte("d")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Existing || !rs[1].Existing || rs[1].ID != rs[0].ID || !rs[2].Existing || rs[2].ID != got[0].ID || rs[3].Existing {
		t.Fatalf("batch receipts %+v", rs)
	}
}

// An idempotency key has no expiry while its job is pending, delayed or
// parked; it lives JOB_IDEMPOTENCY_TTL once the job finished (committed,
// skipped, dead-lettered), answering the job's ID until then; after it, the
// same key enqueues a new job.
func TestIdempotencyKeyLivesTTLAfterFinish(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	e := newEnv(t)
	fail := newSignal()
	h := HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		if string(j.Payload) == "fails" {
			fail.fire()
			return ErrPermanent
		}
		return nil
	})
	qc := Config{Client: e.c, Keys: testKeys, IdempotencyTTL: ttl}
	q := e.queueOf(t, qc, h, nil)
	pttl := func(k string) time.Duration {
		t.Helper()
		d, err := e.c.PTTL(t.Context(), testKeys.Idempotency(k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	enq := func(it Item) Receipt {
		t.Helper()
		r, err := q.EnqueueItem(t.Context(), it)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	later := enq(Item{Key: "d", Payload: []byte("later"), IdempotencyKey: "delayed", NotBefore: time.Now().Add(time.Hour)})
	first := enq(Item{Key: "a", Payload: []byte("ok"), IdempotencyKey: "runs"})
	parked := enq(Item{Key: "p", Payload: []byte("fails"), IdempotencyKey: "parks"})
	for _, k := range []string{"delayed", "runs", "parks"} {
		if d := pttl(k); d != -1 {
			t.Fatalf("key %s: PTTL %s while its job is pending, want none", k, d)
		}
	}
	if r := enq(Item{Key: "d", Payload: []byte("later"), IdempotencyKey: "delayed"}); !r.Existing || r.ID != later.ID {
		t.Fatalf("a duplicate of a delayed job: %+v", r)
	}
	process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	fail.wait(t, "the failing job")
	waitCommitted(t, q, 1)
	poll.Until(t, 10*time.Second, "the key parked", func() bool { return stats(t, q).Parked == 1 })
	if d := pttl("runs"); d <= 0 || d > ttl {
		t.Fatalf("PTTL %s after the commit, want (0, %s]", d, ttl)
	}
	if d := pttl("parks"); d != -1 {
		t.Fatalf("PTTL %s while its job is parked, want none", d)
	}
	if r := enq(Item{Key: "a", Payload: []byte("ok"), IdempotencyKey: "runs"}); !r.Existing || r.ID != first.ID {
		t.Fatalf("a duplicate within the TTL: %+v, want %s", r, first.ID)
	}
	if id, err := q.Skip(t.Context(), Ref{Key: "p"}, "test", "skip it"); err != nil || id != parked.ID {
		t.Fatalf("skip: %s, %v; want %s", id, err, parked.ID)
	}
	if d := pttl("parks"); d <= 0 || d > ttl {
		t.Fatalf("PTTL %s after the skip, want (0, %s]", d, ttl)
	}
	if d := pttl("delayed"); d != -1 {
		t.Fatalf("PTTL %s of a delayed job's key, want none", d)
	}
	poll.Until(t, 10*time.Second, "the key to expire", func() bool { return pttl("runs") == -2 })
	if r := enq(Item{Key: "a", Payload: []byte("ok"), IdempotencyKey: "runs"}); r.Existing || r.ID == first.ID {
		t.Fatalf("after the TTL: %+v, want a new job", r)
	}
}

// Under JOB_ON_FAILURE=dead-letter, a job that fails for good finishes:
// its idempotency key expires from then.
func TestIdempotencyKeyOfADeadLetter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, IdempotencyTTL: time.Hour},
		HandlerFunc(func(context.Context, Job, Lease) error { return ErrPermanent }),
		func(c *WorkerConfig) { c.OnFailure = FailureDeadLetter })
	if _, err := q.EnqueueItem(t.Context(), Item{Payload: []byte("x"), IdempotencyKey: "dl"}); err != nil {
		t.Fatal(err)
	}
	process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 10*time.Second, "a dead letter", func() bool { return stats(t, q).DeadLettered == 1 })
	if d, err := e.c.PTTL(t.Context(), testKeys.Idempotency("dl")).Result(); err != nil || d <= 0 || d > time.Hour {
		t.Fatalf("PTTL %s, %v after the dead letter, want (0, 1h]", d, err)
	}
	if _, err := q.EnqueueItem(t.Context(), Item{Payload: []byte("x"), IdempotencyKey: "bad key"}); !errors.Is(err, ErrIdempotencyKeyInvalid) {
		t.Fatalf("an idempotency key with a space: %v", err)
	}
}
