package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// keyTracker records, per key, the jobs a handler ran, and fails the test
// when two jobs of one key ever run at once.
type keyTracker struct {
	t       testing.TB
	mu      sync.Mutex
	running map[string]int
	ran     map[string][]string // key -> payloads, in the order they ran
	most    int                 // the most jobs in the handler at once
	now     int
}

func newTracker(t testing.TB) *keyTracker {
	return &keyTracker{t: t, running: map[string]int{}, ran: map[string][]string{}}
}

// enter notes job starting; leave must follow.
func (k *keyTracker) enter(j Job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[j.Key]++
	if k.running[j.Key] > 1 && j.Key != "" {
		k.t.Errorf("two jobs of key %q at once", j.Key)
	}
	k.now++
	k.most = max(k.most, k.now)
	k.ran[j.Key] = append(k.ran[j.Key], string(j.Payload))
}

func (k *keyTracker) leave(j Job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[j.Key]--
	k.now--
}

func (k *keyTracker) of(key string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.ran[key])
}

// payloads is prefix0 .. prefix(n-1).
func payloads(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// A key whose job fails waits alone: its later jobs do not start while it
// retries, every other key's jobs run to the end meanwhile, and once it
// passes the key goes on in order.
func TestFailingKeyHoldsOnlyItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := newTracker(t)
	var healed atomic.Bool
	failures := make(chan struct{}, 1000)
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		k.enter(j)
		defer k.leave(j)
		if string(j.Payload) == "a2" && !healed.Load() {
			failures <- struct{}{}
			return errors.New("downstream is down")
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.MaxAttempts = 1000; c.Batch = 4 })
	e.enqueueKey(t, q, "a", "a", 6)
	for _, key := range []string{"b", "c", "d"} {
		e.enqueueKey(t, q, key, key, 20)
	}
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 2+60) // a0, a1 and every other key's jobs
	<-failures
	<-failures // a2 failed twice: a is still held
	if got := k.of("a"); slices.ContainsFunc(got, func(p string) bool { return p > "a2" }) {
		t.Fatalf("a's later jobs ran while a2 failed: %v", got)
	}
	for _, key := range []string{"b", "c", "d"} {
		if got := k.of(key); !slices.Equal(got, payloads(key, 20)) {
			t.Fatalf("key %s ran %v while a failed, want all 20 in order", key, got)
		}
	}
	healed.Store(true)
	waitCommitted(t, q, 66)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var ofA []string
	for _, p := range k.of("a") {
		if len(ofA) == 0 || ofA[len(ofA)-1] != p {
			ofA = append(ofA, p) // a2's retries collapse
		}
	}
	if !slices.Equal(ofA, payloads("a", 6)) {
		t.Fatalf("a ran %v, want a0..a5 in order", ofA)
	}
	if s := stats(t, q); s.Pending != 0 || s.Retries < 2 || s.Parked != 0 {
		t.Fatalf("stats %+v", s)
	}
	noAttemptsLeft(t, e, q)
}

// Crafted failures on one key, with and without group commit: whatever
// fails how often (retried, then passing), the key's jobs take effect in
// enqueue order, each job's first effect after every earlier job's.
func TestKeyOrderThroughFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fails map[string]int // payload -> failed attempts before it passes
	}{
		{"first job", map[string]int{"k0": 2}},
		{"middle job", map[string]int{"k4": 3}},
		{"last job", map[string]int{"k9": 1}},
		{"every other job", map[string]int{"k1": 1, "k3": 2, "k5": 1, "k7": 2}},
		{"a run of failures", map[string]int{"k2": 1, "k3": 1, "k4": 1}},
	} {
		for _, batch := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s batch %d", tc.name, batch), func(t *testing.T) {
				e := newEnv(t)
				var mu sync.Mutex
				left := map[string]int{}
				for p, n := range tc.fails {
					left[p] = n
				}
				q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
					mu.Lock()
					fail := left[string(j.Payload)] > 0
					left[string(j.Payload)]--
					mu.Unlock()
					if fail {
						return errors.New("not yet")
					}
					return e.store.write(ctx, j.ID, lease.Token())
				}), func(c *WorkerConfig) { c.MaxAttempts = 5; c.Batch = batch })
				ids := e.enqueueKey(t, q, "k", "k", 10)
				stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
				waitCommitted(t, q, 10)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if got, _ := effectIDs(t, e); !slices.Equal(got, ids) {
					t.Fatalf("effects %v, want %v", got, ids)
				}
				noAttemptsLeft(t, e, q)
			})
		}
	}
}

// Different keys of one partition run side by side, up to the slots:
// the handler holds every job until four keys are in it at once, which
// one job at a time per partition could never reach.
func TestKeysRunSideBySide(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := newTracker(t)
	slots, err := NewSlots(4)
	if err != nil {
		t.Fatal(err)
	}
	var gate sync.WaitGroup
	gate.Add(4)
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		k.enter(j)
		defer k.leave(j)
		if j.Payload[len(j.Payload)-1] == '0' { // each key's first job
			gate.Done()
			waited := make(chan struct{})
			go func() { gate.Wait(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(10 * time.Second):
				return errors.New("the four keys' first jobs never ran at once")
			}
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.Slots = slots; c.MaxAttempts = 1; c.Batch = 2 })
	for _, key := range []string{"w", "x", "y", "z"} {
		e.enqueueKey(t, q, key, key, 5)
	}
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"w", "x", "y", "z"} {
		if got := k.of(key); !slices.Equal(got, payloads(key, 5)) {
			t.Fatalf("key %s ran %v, want its 5 jobs once each, in order", key, got)
		}
	}
	if k.most != 4 {
		t.Fatalf("at most %d jobs at once, want the 4 slots", k.most)
	}
	if slots.InUse() != 0 || q.InFlight() != 0 {
		t.Fatalf("%d slots, %d runs still held once Process returned", slots.InUse(), q.InFlight())
	}
}

// One Slots shared by two partitions' workers bounds them together: never
// more jobs at once than slots, and both partitions get to run.
func TestSlotsBoundTheReplica(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slots, err := NewSlots(3)
	if err != nil {
		t.Fatal(err)
	}
	k := newTracker(t)
	var full sync.Once
	reached := make(chan struct{})
	var seen [2]atomic.Int64
	h := HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		k.enter(j)
		defer k.leave(j)
		seen[j.Partition].Add(1)
		k.mu.Lock()
		if k.now == 3 {
			full.Do(func() { close(reached) })
		}
		k.mu.Unlock()
		select { // hold the first jobs until the slots are all taken
		case <-reached:
		case <-time.After(10 * time.Second):
			return errors.New("the slots were never all in use")
		}
		return nil
	})
	base := keyspace.MustNew("lockworker:leader")
	var qs [2]*testQueue
	for p := range qs {
		qs[p] = e.queueOf(t, Config{Client: e.c, Keys: base.Partition(p, 2), Partition: p, Partitions: 2}, h,
			func(c *WorkerConfig) { c.Slots = slots; c.MaxAttempts = 1 })
		for i := range 6 {
			e.enqueueKey(t, qs[p], fmt.Sprint("p", p, "k", i), "j", 2)
		}
	}
	for _, q := range qs {
		stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
		defer func() {
			if err := stop(); err != nil {
				t.Error(err)
			}
		}()
	}
	for _, q := range qs {
		waitCommitted(t, q, 12)
	}
	if k.most != 3 || seen[0].Load() != 12 || seen[1].Load() != 12 {
		t.Fatalf("at most %d jobs at once (want the 3 slots), %d and %d jobs run by the partitions (want 12 each)",
			k.most, seen[0].Load(), seen[1].Load())
	}
}

// Without keys a partitioned queue's jobs are groups of their own: they
// run side by side. With one partition they are one serial queue
// (TestProcessInOrder).
func TestKeylessJobsOfPartitionsRunApart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var gate sync.WaitGroup
	gate.Add(2)
	q := e.queueOf(t, Config{Client: e.c, Keys: keyspace.MustNew("x").Partition(1, 4), Partition: 1, Partitions: 4},
		HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
			gate.Done()
			waited := make(chan struct{})
			go func() { gate.Wait(); close(waited) }()
			select {
			case <-waited:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("two keyless jobs never ran at once")
			}
		}), func(c *WorkerConfig) { c.MaxAttempts = 1 })
	e.enqueue(t, q, 2)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 2)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A parked key stays parked across a leader change, its jobs held (the
// ones enqueued after it parked too), while the new leader runs other
// keys; a retry under the new leader releases it in order.
func TestParkingSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var healed atomic.Bool
	k := newTracker(t)
	h := HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		k.enter(j)
		defer k.leave(j)
		if string(j.Payload) == "a1" && !healed.Load() {
			return fmt.Errorf("%w: 404 no such account", ErrPermanent)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	})
	q := e.queue(t, h, nil)
	a := e.enqueueKey(t, q, "a", "a", 3)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 5*time.Second, "a parked", func() bool { return stats(t, q).Parked == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := k.of("a"); !slices.Equal(got, []string{"a0", "a1"}) {
		t.Fatalf("a ran %v, want a0 then a1 (permanent: no retry)", got)
	}
	later := e.enqueueKey(t, q, "a", "later", 1)
	b := e.enqueueKey(t, q, "b", "b", 3)

	q2 := e.queue(t, h, nil)
	t2 := becomeLeader(t, e.c)
	stop2, _ := process(t, q2, newLease(t2, time.Minute))
	waitCommitted(t, q2, 4) // a0 and b's three
	if got := k.of("a"); len(got) != 2 {
		t.Fatalf("the new leader ran a parked key's jobs: %v", got)
	}
	if ps, err := q2.Parked(t.Context()); err != nil || len(ps) != 1 || ps[0].JobID != a[1] || ps[0].Held != 3 {
		t.Fatalf("parked %+v, %v; want a held at a1 with 3 jobs", ps, err)
	}
	healed.Store(true)
	if id, err := q2.Retry(t.Context(), Ref{JobID: a[1]}); err != nil || id != a[1] {
		t.Fatalf("Retry by job ID: %q, %v", id, err)
	}
	waitCommitted(t, q2, 7)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	got, tokens := effectIDs(t, e)
	var ofA []string
	for i, id := range got {
		if !slices.Contains(b, id) {
			ofA = append(ofA, id)
		} else if tokens[i] != t2 {
			t.Fatalf("b's job %s took effect under token %d, want the new leader's", id, tokens[i])
		}
	}
	if want := append(slices.Clone(a), later...); !slices.Equal(ofA, want) {
		t.Fatalf("a's effects %v, want %v", ofA, want)
	}
	noAttemptsLeft(t, e, q2)
}

// A leader lost with runs of many keys in flight: the next one delivers
// every unfinished job again, each key resuming in order right where its
// last recorded job left it (at-least-once per key, in order), and no job
// is lost.
func TestAtLeastOncePerKeyAfterLostLeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	lease1 := newLease(0, time.Minute)
	var writes atomic.Int64
	var lost sync.Once
	h := HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if err := e.store.write(ctx, j.ID, lease.Token()); err != nil {
			return err
		}
		if lease.Token() == lease1.token && writes.Add(1) == 25 {
			lost.Do(func() { lease1.revoked.Store(true) }) // lost with runs in flight
		}
		return nil
	})
	slots, err := NewSlots(6)
	if err != nil {
		t.Fatal(err)
	}
	q := e.queue(t, h, func(c *WorkerConfig) { c.Slots = slots; c.Batch = 4; c.MaxAttempts = 10 })
	ids := map[string][]string{}
	for _, key := range keys {
		ids[key] = e.enqueueKey(t, q, key, key, 10)
	}
	lease1.token = becomeLeader(t, e.c)
	if err := q.Process(t.Context(), lease1); !errors.Is(err, ErrLeaseInvalid) {
		t.Fatalf("leader 1: %v, want ErrLeaseInvalid", err)
	}
	if s := stats(t, q); s.Committed >= 60 || s.InFlight == 0 {
		t.Fatalf("after leader 1: %+v, want runs left claimed", s)
	}
	t2 := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(t2, time.Minute))
	waitCommitted(t, q, 60)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, tokens := effectIDs(t, e)
	keyOf := map[string]string{}
	for key, l := range ids {
		for _, id := range l {
			keyOf[id] = key
		}
	}
	first := map[string][]string{}  // key -> each job's first effect, in order
	second := map[string][]string{} // key -> the new leader's effects, in order
	seen := map[string]bool{}
	for i, id := range got {
		key := keyOf[id]
		if !seen[id] {
			seen[id] = true
			first[key] = append(first[key], id)
		}
		if tokens[i] == t2 {
			second[key] = append(second[key], id)
		}
	}
	for _, key := range keys {
		if !slices.Equal(first[key], ids[key]) {
			t.Errorf("key %s: first effects %v, want %v (each job, in order)", key, first[key], ids[key])
		}
		n := len(second[key])
		if n > 0 && !slices.Equal(second[key], ids[key][10-n:]) {
			t.Errorf("key %s: the new leader's effects %v, want the key's last %d jobs in order", key, second[key], n)
		}
	}
	noAttemptsLeft(t, e, q)
}

// Requeue puts a dead letter back at the head of its key, before the
// key's waiting jobs (after the run in flight, if any); RequeueTail, after
// them. The dead letters keep their key and partition.
func TestRequeueToTheHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var healed atomic.Bool
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if strings.HasPrefix(string(j.Payload), "dead") && !healed.Load() {
			return fmt.Errorf("%w: 400", ErrPermanent)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.OnFailure = FailureDeadLetter })
	d := e.enqueueKey(t, q, "a", "dead", 2)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 5*time.Second, "two dead letters", func() bool { return stats(t, q).DeadLettered == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 2 || dl[0].Key != "a" || dl[0].Partition != 0 {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	later := e.enqueueKey(t, q, "a", "later", 2)
	head, err := q.Requeue(t.Context(), d[0])
	if err != nil {
		t.Fatal(err)
	}
	tailID, err := q.RequeueTail(t.Context(), d[1])
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := q.Unfinished(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, j := range jobs {
		order = append(order, j.ID)
	}
	if want := []string{head, later[0], later[1], tailID}; !slices.Equal(order, want) {
		t.Fatalf("key a holds %v, want the head requeue, the later jobs, the tail requeue: %v", order, want)
	}

	// With a run in flight the requeued job goes right after it.
	token := becomeLeader(t, e.c)
	s := mustStep(t, q, stepArgs{token: token, want: 1, runMax: 2, recover: true})
	if len(s.claimed) != 1 || len(s.claimed[0].jobs) != 2 || s.claimed[0].jobs[0].ID != head {
		t.Fatalf("claimed %+v", s.claimed)
	}
	const dead = "01JDEAD0000000000000000000" // a dead letter of key a, written as step.lua writes one
	e.c.HSet(t.Context(), q.deadRecord(dead), "id", dead, "entry", encodeEntry(dead, 0, entryMeta{}, "a", []byte("again")), "member", "k:a")
	e.c.ZAdd(t.Context(), q.dead, redis.Z{Member: dead})
	again, err := q.Requeue(t.Context(), dead)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ = q.Unfinished(t.Context())
	order = order[:0]
	for _, j := range jobs {
		order = append(order, j.ID)
	}
	if want := []string{head, later[0], again, later[1], tailID}; !slices.Equal(order, want) {
		t.Fatalf("key a holds %v, want %v: the requeued job right after the run in flight", order, want)
	}
	if jobs[2].Key != "a" || string(jobs[2].Payload) != "again" {
		t.Fatalf("the requeued job %+v lost its key or payload", jobs[2])
	}
}

// Skip moves a parked key's failing job to the dead letters, recorded as
// skipped (by whom, why), and releases the held jobs in order; Retry
// gives the failing job fresh attempts. A keyless serial queue is named
// by its failing job's ID.
func TestRetryAndSkip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var healed atomic.Bool
	var mu sync.Mutex
	attempts := map[string][]int{}
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		mu.Lock()
		attempts[string(j.Payload)] = append(attempts[string(j.Payload)], j.Attempt)
		mu.Unlock()
		if strings.HasPrefix(string(j.Payload), "bad") && !healed.Load() {
			return errors.New("bad input")
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.MaxAttempts = 2 })
	bad, err := q.Enqueue(t.Context(), "a", []byte("bad a"))
	if err != nil {
		t.Fatal(err)
	}
	heldA := e.enqueueKey(t, q, "a", "a", 2)
	serialBad, err := q.Enqueue(t.Context(), "", []byte("bad serial"))
	if err != nil {
		t.Fatal(err)
	}
	heldS := e.enqueue(t, q, 2)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 5*time.Second, "two parked groups", func() bool { return stats(t, q).Parked == 2 })
	if _, err := q.Skip(t.Context(), Ref{Key: "a", JobID: serialBad}, "me", "wrong job"); !errors.Is(err, ErrNotParked) {
		t.Fatalf("Skip naming a key and another key's job: %v, want ErrNotParked", err)
	}
	if id, err := q.Skip(t.Context(), Ref{Key: "a"}, "ops@host", "bad input, fixed upstream"); err != nil || id != bad {
		t.Fatalf("Skip: %q, %v", id, err)
	}
	waitCommitted(t, q, 2)
	healed.Store(true)
	if id, err := q.Retry(t.Context(), Ref{JobID: serialBad}); err != nil || id != serialBad {
		t.Fatalf("Retry of the serial queue by its job: %q, %v", id, err)
	}
	waitCommitted(t, q, 5)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, _ := effectIDs(t, e)
	var ofA, ofS []string
	for _, id := range got {
		if slices.Contains(heldA, id) {
			ofA = append(ofA, id)
		} else {
			ofS = append(ofS, id)
		}
	}
	if !slices.Equal(ofA, heldA) || !slices.Equal(ofS, append([]string{serialBad}, heldS...)) {
		t.Fatalf("effects: a %v, serial %v; want a's held jobs in order, the serial queue's in order", ofA, ofS)
	}
	mu.Lock()
	if got := attempts["bad serial"]; !slices.Equal(got, []int{1, 2, 1}) {
		t.Errorf("the retried job's attempts %v, want 1, 2, then 1 afresh", got)
	}
	mu.Unlock()
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	if d := dl[0]; d.ID != bad || d.Key != "a" || d.SkippedBy != "ops@host" || d.SkipReason != "bad input, fixed upstream" ||
		d.Error != "bad input" || d.Attempts != 2 || string(d.Payload) != "bad a" {
		t.Fatalf("skipped dead letter %+v", d)
	}
	if s := stats(t, q); s.Pending != 0 || s.Parked != 0 || s.Committed != 5 || s.DeadLettered != 1 {
		t.Fatalf("stats %+v", s)
	}
	noAttemptsLeft(t, e, q)
}

// A job whose store answers "stale token" (409) to three leaderships in a
// row parks its key with an error that names the way out, instead of
// moving the partition between replicas forever; the first two give the
// leadership up and park nothing.
func TestThreeStaleLeadershipsPark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if string(j.Payload) == "fenced0" {
			return fmt.Errorf("store: %w", ErrStaleToken)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), nil)
	fenced := e.enqueueKey(t, q, "fenced", "fenced", 2)
	for leader := 1; leader <= 3; leader++ {
		err := q.Process(t.Context(), newLease(becomeLeader(t, e.c), time.Minute))
		if !errors.Is(err, ErrStaleToken) {
			t.Fatalf("leader %d: %v, want ErrStaleToken", leader, err)
		}
		if parked := stats(t, q).Parked; parked != int64(leader/3) {
			t.Fatalf("after leader %d: %d parked", leader, parked)
		}
	}
	ps, err := q.Parked(t.Context())
	if err != nil || len(ps) != 1 || ps[0].JobID != fenced[0] || ps[0].Held != 2 ||
		!strings.Contains(ps[0].Error, "lockworker epoch --raise-to") || !strings.Contains(ps[0].Error, "3 leaderships") {
		t.Fatalf("parked %+v, %v", ps, err)
	}
	other := e.enqueueKey(t, q, "other", "o", 2)
	stop, done := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 2)
	select {
	case err := <-done:
		t.Fatalf("the fourth leader ended (%v): the parked key should not reach its store", err)
	default:
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, _ := effectIDs(t, e); !slices.Equal(got, other) {
		t.Fatalf("effects %v, want the other key's only", got)
	}
}

// A lease found no longer valid is logged with its reason, before a job
// or after one (the job then not recorded), never silently.
func TestLeaseInvalidIsLoggedWithItsReason(t *testing.T) {
	t.Parallel()
	for _, when := range []string{"before", "after"} {
		t.Run(when, func(t *testing.T) {
			e := newEnv(t)
			logs := &tail.Buffer{}
			lease := newLease(0, time.Minute)
			q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error {
				lease.mu.Lock()
				lease.deadline = time.Now().Add(-time.Millisecond) // e.g. a pause past the deadline
				lease.mu.Unlock()
				return nil
			}), func(c *WorkerConfig) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
			e.enqueue(t, q, 2)
			lease.token = becomeLeader(t, e.c)
			if when == "before" {
				lease.deadline = time.Now().Add(-time.Millisecond)
			}
			if err := q.Process(t.Context(), lease); !errors.Is(err, ErrLeaseInvalid) {
				t.Fatalf("Process: %v, want ErrLeaseInvalid", err)
			}
			out := logs.String()
			if !strings.Contains(out, `msg="lease no longer valid`) || !strings.Contains(out, "local deadline passed") {
				t.Fatalf("logs do not say the lease ended and why:\n%s", out)
			}
			if s := stats(t, q); s.Committed != 0 {
				t.Fatalf("stats %+v: a job recorded on an invalid lease", s)
			}
		})
	}
}

// RetryAfter: a 429's or 503's Retry-After sets the wait, never beyond
// Retry.Max; without one, the Retry policy's step.
func TestRetryDelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), func(c *WorkerConfig) { c.Retry.Base, c.Retry.Max = time.Second, time.Minute })
	for _, tc := range []struct {
		err      error
		min, max time.Duration
	}{
		{&HTTPStatusError{Status: 429, Wait: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{fmt.Errorf("wrapped: %w", &HTTPStatusError{Status: 503, Wait: time.Hour}), time.Minute, time.Minute},
		{&HTTPStatusError{Status: 500, Wait: -1}, 500 * time.Millisecond, time.Second},
		{errors.New("plain"), 500 * time.Millisecond, time.Second},
	} {
		if d := q.retryDelay(1, tc.err); d < tc.min || d > tc.max {
			t.Errorf("%v: wait %s, want %s to %s", tc.err, d, tc.min, tc.max)
		}
	}
	if d := q.retryDelay(10, errors.New("plain")); d < 30*time.Second || d > time.Minute {
		t.Errorf("10th attempt: wait %s, want Max, jittered", d)
	}
}

// BenchmarkKeysConcurrency is the measurement behind DefaultConcurrency:
// jobs/s of one partition's 600 jobs over 200 keys (3 each), a 10 ms
// handler, per JOB_CONCURRENCY. With one slot it is one job at a time per
// partition (the model before keys); the keys allow up to 200 at once.
func BenchmarkKeysConcurrency(b *testing.B) {
	for _, n := range []int{1, 4, 8, 16, 32, 64} {
		b.Run("concurrency="+fmt.Sprint(n), func(b *testing.B) {
			e := newEnv(b)
			slots, err := NewSlots(n)
			if err != nil {
				b.Fatal(err)
			}
			q := e.queue(b, HandlerFunc(func(ctx context.Context, _ Job, _ Lease) error {
				t := time.NewTimer(10 * time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}), func(c *WorkerConfig) { c.Slots = slots; c.Batch = DefaultBatch })
			const jobs = 600
			for range b.N {
				items := make([]Item, jobs)
				for i := range items {
					items[i] = Item{Key: fmt.Sprint("key-", i%200), Payload: []byte("x")}
				}
				if _, err := q.EnqueueMany(b.Context(), items); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			stop, _ := process(b, q, newLease(becomeLeader(b, e.c), time.Hour))
			waitCommitted(b, q, int64(b.N*jobs))
			b.StopTimer()
			if err := stop(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*jobs)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// A retry holds its group in Redis until it falls due, whoever leads:
// one step claims every group that may run (here two), a retried group is
// not claimed again before its due time, the reply says when that is,
// and once the clock passes it the group runs again, its head delivered
// for the second time.
func TestRetryHoldsItsGroupUntilDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now()
	clock := func() time.Time { return now }
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Now: clock}, HandlerFunc(noop), nil)
	a := e.enqueueKey(t, q, "a", "a", 2)
	e.enqueueKey(t, q, "b", "b", 1)
	token := becomeLeader(t, e.c)
	s := mustStep(t, q, stepArgs{token: token, want: 2, runMax: 1, recover: true})
	if len(s.claimed) != 2 {
		t.Fatalf("one step claimed %d groups, want both", len(s.claimed))
	}
	var runA, runB claim
	for _, c := range s.claimed {
		if c.member == "k:a" {
			runA = c
		} else {
			runB = c
		}
	}
	due := now.Add(time.Hour)
	retry := outcome{member: runA.member, first: a[0], end: endRetry, head: a[0], attempts: 1, due: due}
	s = mustStep(t, q, stepArgs{token: token, outcomes: []outcome{retry, committed(runB)}, want: 2, runMax: 1})
	if !s.applied[0] || !s.applied[1] || len(s.claimed) != 0 || s.readyNow != 0 || !s.nextDue.Equal(due.Truncate(time.Millisecond)) {
		t.Fatalf("after the retry: %+v, want nothing claimed and the retry due at %s", s, due)
	}
	if st := stats(t, q); st.Retries != 1 || st.Pending != 2 || st.Committed != 1 {
		t.Fatalf("stats %+v", st)
	}
	now = due.Add(-time.Millisecond)
	if s = mustStep(t, q, stepArgs{token: token, want: 2, runMax: 1}); len(s.claimed) != 0 {
		t.Fatalf("claimed %+v a millisecond before the retry was due", s.claimed)
	}
	now = due
	s = mustStep(t, q, stepArgs{token: token, want: 2, runMax: 2})
	if len(s.claimed) != 1 || len(s.claimed[0].jobs) != 1 || s.claimed[0].jobs[0].ID != a[0] || s.claimed[0].jobs[0].Attempt != 2 {
		t.Fatalf("claimed %+v once due, want a's head alone, its second delivery", s.claimed)
	}
}

// A claim of a group whose run still executes, or waits to be recorded,
// can only come from writes Redis lost (a failover): the loop drops it,
// so a key never has two runs at once, and has the next step release it.
func TestDuplicateClaimIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error {
		t.Error("a dropped claim ran")
		return nil
	}), nil)
	l := newLoop(t.Context(), q.Worker, newLease(1, time.Minute))
	defer l.end()
	l.recover = false
	l.running["k:a"] = true
	l.pending = []runResult{{outcome: outcome{member: "k:b"}}}
	l.slots = 2
	for _, m := range []string{"k:a", "k:b"} {
		l.start(claim{member: m, jobs: []Job{{ID: "01J", Attempt: 1}}})
		if l.slots != 2 || !l.recover || q.InFlight() != 0 || len(l.running) != 1 {
			t.Fatalf("claim of %s, running or unrecorded: slots %d, recover %v, in flight %d: want it dropped and released next",
				m, l.slots, l.recover, q.InFlight())
		}
	}
	l.slots = 0
}
