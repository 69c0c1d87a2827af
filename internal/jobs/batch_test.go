package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// With group commit every job still runs once, in order, as its first
// delivery, and a deep queue takes far fewer steps than jobs.
func TestBatchInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if j.Attempt != 1 {
			t.Errorf("job %s attempt %d, want 1", j.ID, j.Attempt)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.Batch = 8; c.PollInterval = time.Hour })
	ids := e.enqueue(t, q, 100)
	for _, s := range []*redis.Script{stepScript, fencedWrite} {
		if err := s.Load(t.Context(), e.c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	calls := scriptCalls(t, e.c)
	token := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(token, time.Minute))
	waitCommitted(t, q, 100)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, _ := effectIDs(t, e)
	if !slices.Equal(got, ids) {
		t.Fatalf("effects\n%v\nwant\n%v", got, ids)
	}
	// 14 steps claim and record 100 jobs by 8 (the last finds no more);
	// the store's writes are scripts too.
	if steps := scriptCalls(t, e.c) - calls - len(got); steps != 14 {
		t.Fatalf("%d steps for 100 jobs in batches of 8", steps)
	}
	if s := stats(t, q); s.Pending != 0 || s.Committed != 100 || lastCommitted(t, q) != ids[99] {
		t.Fatalf("stats %+v", s)
	}
	if n := q.Committed(); n != 100 {
		t.Fatalf("Committed() = %d", n)
	}
	noAttemptsLeft(t, e, q)
}

// One step commits a whole run: its jobs leave the group, the counters
// move by the run, the group is ready again at its next job's enqueue
// time, and a resent step changes nothing more.
func TestRunCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	ids := e.enqueue(t, q, 7)
	token := becomeLeader(t, e.c)
	s := mustStep(t, q, stepArgs{token: token, want: 3, runMax: 5, recover: true})
	if len(s.claimed) != 1 || len(s.claimed[0].jobs) != 5 {
		t.Fatalf("claimed %+v, want one run of 5 (one serial group)", s.claimed)
	}
	run := s.claimed[0]
	for i, j := range run.jobs {
		if j.ID != ids[i] || j.Attempt != 1 || string(j.Payload) != fmt.Sprintf("job %d", i) || j.Key != "" || j.EnqueuedAt.IsZero() {
			t.Fatalf("claimed %d: %+v", i, j)
		}
	}
	if st := stats(t, q); st.InFlight != 1 || st.Pending != 7 || st.OldestPendingMs <= 0 {
		t.Fatalf("stats with a run in flight %+v", st)
	}
	s = mustStep(t, q, stepArgs{token: token, outcomes: []outcome{committed(run)}, want: 3, runMax: 5})
	if !s.applied[0] || len(s.claimed) != 1 || len(s.claimed[0].jobs) != 2 || s.claimed[0].jobs[0].ID != ids[5] {
		t.Fatalf("after the run's commit: %+v", s)
	}
	if st := stats(t, q); st.Committed != 5 || st.Pending != 2 || lastCommitted(t, q) != ids[4] {
		t.Fatalf("stats %+v", st)
	}
	s = mustStep(t, q, stepArgs{token: token, outcomes: []outcome{committed(run)}})
	if s.applied[0] {
		t.Fatal("a resent commit was applied again")
	}
	if st := stats(t, q); st.Committed != 5 || st.Pending != 2 {
		t.Fatalf("a resent run commit counted again: %+v", st)
	}
}

// A leader lost mid-run (here after 4 of a run of 8) leaves the whole
// run uncommitted: the next leader runs again the jobs it finished and
// the ones it never reached, one at a time (each as a second delivery),
// then goes back to runs of 8.
func TestLostBatchRedo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	lease1 := newLease(0, time.Minute)
	q1 := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if err := e.store.write(ctx, j.ID, lease.Token()); err != nil {
			return err
		}
		if j.ID == ids[3] {
			lease1.revoked.Store(true) // lost: nothing of the batch is recorded
		}
		return nil
	}), func(c *WorkerConfig) { c.Batch = 8 })
	ids = e.enqueue(t, q1, 20)
	lease1.token = becomeLeader(t, e.c)
	if err := q1.Process(t.Context(), lease1); !errors.Is(err, ErrLeaseInvalid) {
		t.Fatalf("leader 1: %v, want ErrLeaseInvalid", err)
	}
	if s := stats(t, q1); s.Committed != 0 || s.Pending != 20 {
		t.Fatalf("after leader 1: %+v, want nothing committed", s)
	}

	var mu sync.Mutex
	attempts := map[string]int{}
	q2 := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		mu.Lock()
		attempts[j.ID] = j.Attempt
		mu.Unlock()
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.Batch = 8; c.PollInterval = time.Hour })
	calls := scriptCalls(t, e.c)
	t2 := becomeLeader(t, e.c)
	stop, _ := process(t, q2, newLease(t2, time.Minute))
	waitCommitted(t, q2, 20)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, tokens := effectIDs(t, e)
	want := append(slices.Clone(ids[:4]), ids...)
	if !slices.Equal(got, want) {
		t.Fatalf("effects\n%v\nwant\n%v", got, want)
	}
	for i, tok := range tokens {
		if (i < 4) != (tok == lease1.token) {
			t.Fatalf("effect %d under token %d", i, tok)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		if want := 1 + btoi(i < 8); attempts[id] != want {
			t.Errorf("job %d: attempt %d, want %d", i, attempts[id], want)
		}
	}
	// 8 steps claim the lost batch's jobs one at a time, 2 more the other
	// 12 in batches of 8, and the last one records them and finds none.
	if steps := scriptCalls(t, e.c) - calls - (len(got) - 4); steps != 11 {
		t.Errorf("%d steps, want 11", steps)
	}
	noAttemptsLeft(t, e, q2)
}

// With JOB_MAX_ATTEMPTS=1 a lost run's jobs have had their one delivery:
// the next leader fails them for good without running them, one at a
// time: dead-letters them (dead-letter) and leaves no count behind, or
// parks the group at the first (park: with one partition and no keys,
// the whole serial queue waits for an operator).
func TestLostBatchOneAttempt(t *testing.T) {
	t.Parallel()
	t.Run("dead-letter", func(t *testing.T) { lostRunOneAttempt(t, FailureDeadLetter) })
	t.Run("park", func(t *testing.T) { lostRunOneAttempt(t, FailurePark) })
}

func lostRunOneAttempt(t *testing.T, policy FailurePolicy) {
	e := newEnv(t)
	lease := newLease(0, time.Minute)
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error {
		lease.revoked.Store(true)
		return nil
	}), func(c *WorkerConfig) { c.Batch = 4; c.MaxAttempts = 1; c.OnFailure = policy })
	ids := e.enqueue(t, q, 6)
	lease.token = becomeLeader(t, e.c)
	if err := q.Process(t.Context(), lease); !errors.Is(err, ErrLeaseInvalid) {
		t.Fatal(err)
	}
	ran := 0
	q2 := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error { ran++; return nil }),
		func(c *WorkerConfig) { c.Batch = 4; c.MaxAttempts = 1; c.OnFailure = policy })
	stop, _ := process(t, q2, newLease(becomeLeader(t, e.c), time.Minute))
	if policy == FailurePark {
		poll.Until(t, 5*time.Second, "the serial queue parked", func() bool { return stats(t, q2).Parked == 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		ps, err := q2.Parked(t.Context())
		if err != nil || len(ps) != 1 || ps[0].JobID != ids[0] || ps[0].Key != "" || ps[0].Held != 6 || ran != 0 {
			t.Fatalf("parked %+v, %v, ran %d: want the queue held at job 0, nothing run", ps, err, ran)
		}
		return
	}
	waitCommitted(t, q2, 2)
	poll.Until(t, 5*time.Second, "4 dead letters", func() bool { return stats(t, q2).DeadLettered == 4 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	noAttemptsLeft(t, e, q2)
}

// A job that kills its leader each time does not take its run-mates with
// it: after the lost run each job is delivered alone, the poison one runs
// out of attempts alone (dead-lettered, here), and every other job is
// committed.
func TestPoisonIsolatedInBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var lease *fakeLease
	attempts := map[string][]int{}
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, l Lease) error {
		mu.Lock()
		attempts[string(j.Payload)] = append(attempts[string(j.Payload)], j.Attempt)
		mu.Unlock()
		if string(j.Payload) == "poison" {
			lease.revoked.Store(true) // it brings its leader down
			return nil
		}
		return e.store.write(ctx, j.ID, l.Token())
	}), func(c *WorkerConfig) { c.Batch = 8; c.MaxAttempts = 3; c.OnFailure = FailureDeadLetter })
	var all []string
	for _, p := range []string{"job 0", "job 1", "poison", "after 0", "after 1", "after 2", "after 3",
		"after 4", "after 5", "after 6", "after 7", "after 8", "after 9"} {
		id, err := q.Enqueue(t.Context(), "", []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	poison := all[2]
	// Leaders 1-3 each run it and are lost: 1 with its batch, 2 and 3 with
	// it alone.
	for leader := 1; leader <= 3; leader++ {
		lease = newLease(becomeLeader(t, e.c), time.Minute)
		if err := q.Process(t.Context(), lease); !errors.Is(err, ErrLeaseInvalid) {
			t.Fatalf("leader %d: %v, want ErrLeaseInvalid", leader, err)
		}
	}
	// Leader 4 dead-letters it without running it and does the rest.
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 12)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 1 || dl[0].ID != poison || dl[0].Attempts != 3 || !strings.Contains(dl[0].Error, "none finished") {
		t.Fatalf("dead letters %+v, %v; want the poison job alone, after 3 deliveries", dl, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := attempts["poison"]; !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("poison attempts %v, want 1, 2, 3", got)
	}
	// Its batch-mates: delivered with it in the lost batch (job 0 and 1
	// ran, after 0-4 were not reached), then alone as a second delivery;
	// the jobs after the batch as firsts.
	for p, want := range map[string][]int{"job 0": {1, 2}, "job 1": {1, 2}, "after 0": {2}, "after 4": {2}, "after 5": {1}, "after 9": {1}} {
		if got := attempts[p]; !slices.Equal(got, want) {
			t.Errorf("%s attempts %v, want %v", p, got, want)
		}
	}
	got, _ := effectIDs(t, e)
	var firsts []string
	seen := map[string]bool{}
	for _, id := range got {
		if !seen[id] {
			seen[id] = true
			firsts = append(firsts, id)
		}
	}
	if want := slices.Delete(slices.Clone(all), 2, 3); !slices.Equal(firsts, want) {
		t.Fatalf("effects (first of each) %v, want %v", firsts, want)
	}
	if s := stats(t, q); s.Committed != 12 || s.Pending != 0 {
		t.Fatalf("stats %+v", s)
	}
	noAttemptsLeft(t, e, q)
}

// A job that fails (an error, not a lost leader) ends its run: the jobs
// before it are committed, the ones after it given back untouched, and it
// is retried alone until dead-lettered (dead-letter, here); the rest then
// runs as first deliveries.
func TestFailingJobInBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	attempts := map[string][]int{}
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, l Lease) error {
		mu.Lock()
		attempts[string(j.Payload)] = append(attempts[string(j.Payload)], j.Attempt)
		mu.Unlock()
		if string(j.Payload) == "job 3" {
			return errors.New("boom")
		}
		return e.store.write(ctx, j.ID, l.Token())
	}), func(c *WorkerConfig) { c.Batch = 8; c.MaxAttempts = 3; c.OnFailure = FailureDeadLetter })
	ids := e.enqueue(t, q, 10)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 9)
	poll.Until(t, 5*time.Second, "a dead letter", func() bool { return stats(t, q).DeadLettered == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for p, want := range map[string][]int{"job 2": {1}, "job 3": {1, 2, 3}, "job 4": {1}, "job 9": {1}} {
		if got := attempts[p]; !slices.Equal(got, want) {
			t.Errorf("%s attempts %v, want %v", p, got, want)
		}
	}
	got, _ := effectIDs(t, e)
	if want := append(slices.Clone(ids[:3]), ids[4:]...); !slices.Equal(got, want) {
		t.Fatalf("effects %v, want %v", got, want)
	}
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 1 || dl[0].ID != ids[3] || dl[0].Attempts != 3 || dl[0].Error != "boom" ||
		string(dl[0].Payload) != "job 3" || dl[0].EnqueuedAt.IsZero() {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	noAttemptsLeft(t, e, q)
}

// Work stopped mid-batch: the jobs finished are committed, the ones not
// started are given back, and the next leader delivers them as firsts.
func TestBatchStopCommitsFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	var ids []string
	q := e.queue(t, HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		if j.ID == ids[2] {
			cancel() // StopWork arrives as job 2 completes
		}
		return nil
	}), func(c *WorkerConfig) { c.Batch = 8 })
	ids = e.enqueue(t, q, 8)
	if err := q.Process(ctx, newLease(becomeLeader(t, e.c), time.Minute)); err != nil {
		t.Fatalf("Process: %v", err)
	}
	if s := stats(t, q); s.Committed != 3 || lastCommitted(t, q) != ids[2] {
		t.Fatalf("stats %+v, want the 3 finished jobs committed", s)
	}
	var first []int
	q2 := e.queue(t, HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		first = append(first, j.Attempt)
		return nil
	}), func(c *WorkerConfig) { c.Batch = 8 })
	stop, _ := process(t, q2, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q2, 8)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first, []int{1, 1, 1, 1, 1}) {
		t.Fatalf("the given-back jobs ran as attempts %v, want first deliveries", first)
	}
}

// BatchWindow: slow jobs are committed as they go, not a batch later. Job
// 3 only finishes once jobs 0-2 are committed, which with a batch of 8
// and no window would never happen.
func TestBatchWindowCommitsAsItGoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var q *testQueue
	var ids []string
	q = e.queue(t, HandlerFunc(func(ctx context.Context, j Job, _ Lease) error {
		if j.ID == ids[3] {
			deadline := time.Now().Add(10 * time.Second)
			for s, err := q.Stats(ctx); err != nil || s.Committed < 3; s, err = q.Stats(ctx) {
				if time.Now().After(deadline) {
					return errors.New("jobs 0-2 not committed while job 3 ran")
				}
				time.Sleep(poll.Interval)
			}
		}
		return nil
	}), func(c *WorkerConfig) { c.Batch = 8; c.BatchWindow = time.Nanosecond; c.MaxAttempts = 1 })
	ids = e.enqueue(t, q, 8)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 8)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, q); s.DeadLettered != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNewWorkerBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		batch int
		want  string
	}{{-1, "Batch must be between 1 and 1000, got -1"}, {MaxWorkerBatch + 1, "got 1001"}} {
		_, err := NewWorker(WorkerConfig{Queue: e.queue(t, HandlerFunc(noop), nil).Queue, Handler: HandlerFunc(noop), Batch: c.batch})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Batch %d: %v, want %q", c.batch, err, c.want)
		}
	}
	w, err := NewWorker(WorkerConfig{Queue: e.queue(t, HandlerFunc(noop), nil).Queue, Handler: HandlerFunc(noop)})
	if err != nil || w.cfg.Batch != DefaultBatch || w.cfg.BatchWindow != 50*time.Millisecond {
		t.Fatalf("defaults: %+v, %v", w.cfg, err)
	}
}
