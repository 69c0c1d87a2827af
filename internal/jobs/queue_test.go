package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

func noop(context.Context, Job, Lease) error { return nil }

func TestNewValidates(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	ok := func() Config { return Config{Client: c, Keys: testKeys} }
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "Client is required"},
		{"no keys", func(c *Config) { c.Keys = keyspace.Lease{} }, "Keys is required"},
		{"partition out of range", func(c *Config) { c.Partition, c.Partitions = 4, 4 }, "Partition must be in [0, Partitions)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.mod(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "jobs: ") {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	q, err := New(ok())
	if err != nil {
		t.Fatal(err)
	}
	if q.cfg.FenceKey != testKeys.Fence() || q.cfg.Now == nil {
		t.Fatalf("defaults not applied: %+v", q.cfg)
	}
}

func TestNewWorkerValidates(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	q, err := New(Config{Client: c, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	ok := func() WorkerConfig { return WorkerConfig{Queue: q, Handler: HandlerFunc(noop)} }
	for _, tc := range []struct {
		name string
		mod  func(*WorkerConfig)
		want string
	}{
		{"no queue", func(c *WorkerConfig) { c.Queue = nil }, "Queue is required"},
		{"no handler", func(c *WorkerConfig) { c.Handler = nil }, "Handler is required"},
		{"negative attempts", func(c *WorkerConfig) { c.MaxAttempts = -1 }, "MaxAttempts must be at least 1"},
		{"negative backoff", func(c *WorkerConfig) { c.Backoff = backoff.Policy{Base: -time.Second, Max: time.Second} }, "Base must be positive"},
		{"negative poll", func(c *WorkerConfig) { c.PollInterval = -1 }, "PollInterval must not be negative"},
		{"max below base", func(c *WorkerConfig) { c.Backoff = backoff.Policy{Base: time.Second, Max: time.Millisecond} }, "Max (1ms) must not be below Base (1s)"},
		{"retry max below base", func(c *WorkerConfig) { c.Retry = backoff.Policy{Base: time.Second, Max: time.Millisecond} }, "Retry: backoff: Max (1ms)"},
		{"unknown failure policy", func(c *WorkerConfig) { c.OnFailure = 7 }, "OnFailure must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.mod(&cfg)
			_, err := NewWorker(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "jobs: ") {
				t.Fatalf("NewWorker: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	w, err := NewWorker(ok())
	if err != nil {
		t.Fatal(err)
	}
	if w.cfg.MaxAttempts != 25 || w.cfg.Backoff != (backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}) ||
		w.cfg.Retry != (backoff.Policy{Base: time.Second, Max: time.Minute}) || w.cfg.OnFailure != FailurePark ||
		w.slots.Size() != DefaultConcurrency || w.cfg.PollInterval != 500*time.Millisecond || w.cfg.Logger == nil {
		t.Fatalf("defaults not applied: %+v", w.cfg)
	}
}

func TestEnqueueAndStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	if s := stats(t, q); s != (figures.Queue{}) {
		t.Fatalf("empty queue stats = %+v", s)
	}
	ids := e.enqueue(t, q, 3)
	if !slices.IsSorted(ids) || len(ids[0]) != 26 {
		t.Fatalf("ids not ULIDs in order: %v", ids)
	}
	becomeLeader(t, e.c)
	becomeLeader(t, e.c)
	if s := stats(t, q); s.Pending != 3 || s.Epoch != 2 || s.Committed != 0 || s.OldestPendingMs <= 0 || s.OldestPendingMs > time.Minute.Milliseconds() {
		t.Fatalf("stats = %+v, want 3 pending at epoch 2, the oldest enqueued just now", s)
	}
}

// The core promise of the serial queue (one partition, no keys): every
// job, in enqueue order, one at a time though slots allow many, exactly
// once, with the payload as enqueued.
func TestProcessInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	payloads := map[string]string{}
	var now, most atomic.Int64
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		mu.Lock()
		payloads[j.ID] = string(j.Payload)
		mu.Unlock()
		if j.Attempt != 1 {
			t.Errorf("job %s attempt %d, want 1", j.ID, j.Attempt)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), nil)
	if q.slots.Size() < 2 {
		t.Fatal("the test needs more than one slot")
	}
	ids := e.enqueue(t, q, 50)
	token := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(token, time.Minute))
	waitCommitted(t, q, 50)
	more := e.enqueue(t, q, 5) // an idle leader picks up new work
	waitCommitted(t, q, 55)
	if err := stop(); err != nil {
		t.Fatalf("Process after cancel: %v, want nil", err)
	}
	ids = append(ids, more...)
	var got []string
	for _, ef := range e.store.effects(t) {
		got = append(got, ef.id)
		if ef.token != token {
			t.Fatalf("effect %s with token %d, want %d", ef.id, ef.token, token)
		}
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("effects\n%v\nwant\n%v", got, ids)
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("%d keyless jobs ran at once; the serial queue runs one", m)
	}
	if payloads[ids[7]] != "job 7" {
		t.Fatalf("payload of job 7 = %q", payloads[ids[7]])
	}
	s := stats(t, q)
	if s.Pending != 0 || s.Committed != 55 || lastCommitted(t, q) != ids[len(ids)-1] || s.DeadLettered != 0 || s.InFlight != 0 {
		t.Fatalf("stats = %+v", s)
	}
	noAttemptsLeft(t, e, q)
}

// Leader 1 dies mid-job; leader 2 resumes right after the last committed
// job. Only the in-flight job's effect repeats, and every job is committed
// exactly once, in order.
func TestLeaderChangeResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := []string(nil)
	inFlight := newSignal()
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if err := e.store.write(ctx, j.ID, lease.Token()); err != nil {
			return err
		}
		if j.ID == ids[7] && j.Attempt == 1 {
			inFlight.fire()
			<-ctx.Done() // leader 1 is lost while it works on job 7
			return context.Cause(ctx)
		}
		return nil
	}), nil)
	ids = e.enqueue(t, q, 20)

	t1 := becomeLeader(t, e.c)
	stop1, _ := process(t, q, newLease(t1, time.Minute))
	inFlight.wait(t, "leader 1 to start job 7")
	if err := stop1(); err != nil {
		t.Fatalf("leader 1 Process: %v, want nil on cancel", err)
	}
	if s := stats(t, q); s.Committed != 7 || lastCommitted(t, q) != ids[6] {
		t.Fatalf("after leader 1: %+v, want 7 committed up to %s", s, ids[6])
	}

	t2 := becomeLeader(t, e.c)
	var job7Attempt int
	q2 := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if j.ID == ids[7] {
			job7Attempt = j.Attempt
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), nil)
	stop2, _ := process(t, q2, newLease(t2, time.Minute))
	waitCommitted(t, q, 20)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}

	want := append(slices.Clone(ids[:8]), ids[7:]...) // job 7 twice: once per leader
	var got []string
	for i, ef := range e.store.effects(t) {
		got = append(got, ef.id)
		wantTok := t1
		if i >= 8 {
			wantTok = t2
		}
		if ef.token != wantTok {
			t.Errorf("effect %d (%s) token %d, want %d", i, ef.id, ef.token, wantTok)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("effects\n%v\nwant\n%v", got, want)
	}
	if job7Attempt != 2 {
		t.Fatalf("job 7 under leader 2 had Attempt %d, want 2 (the count survives the leader change)", job7Attempt)
	}
	if s := stats(t, q); s.Committed != 20 || s.Pending != 0 || lastCommitted(t, q) != ids[19] {
		t.Fatalf("stats %+v", s)
	}
}

// A step whose token is below one the store has accepted (here: the next
// leader's first step), whatever it carries (a commit and a claim, a
// retry, a park, a dead letter, an interruption, a give-back, a claim
// alone), is rejected with ErrStaleToken and changes nothing at all.
func TestStaleTokenLeavesNoTrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	ctx := t.Context()
	ids := e.enqueueKey(t, q, "a", "a", 3)
	e.enqueueKey(t, q, "b", "b", 2)
	old := becomeLeader(t, e.c)
	s := mustStep(t, q, stepArgs{token: old, want: 2, runMax: 2, recover: true})
	if len(s.claimed) != 2 || s.claimed[0].member != "k:a" || len(s.claimed[0].jobs) != 2 || s.claimed[0].jobs[0].ID != ids[0] {
		t.Fatalf("claimed %+v, want a's first two jobs, then b's", s.claimed)
	}
	a := s.claimed[0]
	newer := takeOver(t, q.Queue)

	before := snapshot(t, e.c, q.Queue)
	statsBefore := stats(t, q)
	head := a.jobs[0].ID
	for _, c := range []struct {
		name string
		a    stepArgs
	}{
		{"commit and claim", stepArgs{outcomes: []outcome{committed(a)}, want: 1, runMax: 1}},
		{"retry", stepArgs{outcomes: []outcome{{member: a.member, first: head, end: endRetry, head: head, attempts: 1, due: time.Now()}}}},
		{"park", stepArgs{outcomes: []outcome{{member: a.member, first: head, end: endPark, head: head, attempts: 3, cause: "boom"}}}},
		{"dead-letter", stepArgs{outcomes: []outcome{{member: a.member, first: head, popped: 1, dead: []deadJob{{0, 1, "boom"}}, end: endDone}}}},
		{"interrupted", stepArgs{outcomes: []outcome{{member: a.member, first: head, end: endInterrupted, head: head}}}},
		{"give back", stepArgs{outcomes: []outcome{{member: a.member, first: head, end: endDone}}}},
		{"recover", stepArgs{recover: true}},
		{"claim", stepArgs{want: 4, runMax: 4}},
	} {
		c.a.token = old
		_, err := q.step(ctx, c.a)
		var se *StaleError
		if !errors.Is(err, ErrStaleToken) || !errors.As(err, &se) || se.Token != old || se.Epoch != newer {
			t.Fatalf("%s with token %d at fence %d: %v, want ErrStaleToken", c.name, old, newer, err)
		}
	}
	if after := snapshot(t, e.c, q.Queue); !maps.Equal(before, after) {
		t.Fatalf("a stale write changed the queue:\nbefore %v\nafter  %v", keys(before), keys(after))
	}
	st := stats(t, q)
	st.OldestPendingMs, statsBefore.OldestPendingMs = 0, 0 // the oldest job waits on
	if st != statsBefore {
		t.Fatalf("stats after stale writes %+v, before %+v", st, statsBefore)
	}
	if dl, err := q.DeadLetters(ctx, 0); err != nil || len(dl) != 0 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
}

// A step sent again (its reply was lost) applies nothing twice: the
// outcome's claim is gone, so it is answered "not applied" and counts
// nothing; what the lost send claimed is released by the next step that
// asks (recover), without a delivery counted, and claimed again.
func TestResentStepAppliesNothingTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	ids := e.enqueue(t, q, 5)
	token := becomeLeader(t, e.c)
	s := mustStep(t, q, stepArgs{token: token, want: 1, runMax: 2, recover: true})
	first := s.claimed[0]
	if len(first.jobs) != 2 || first.member != memberSerial || first.jobs[0].ID != ids[0] || first.jobs[0].Attempt != 1 {
		t.Fatalf("claimed %+v", s.claimed)
	}
	done := stepArgs{token: token, outcomes: []outcome{committed(first)}, want: 1, runMax: 2}
	s = mustStep(t, q, done)
	if !s.applied[0] || len(s.claimed) != 1 || s.claimed[0].jobs[0].ID != ids[2] {
		t.Fatalf("first send: %+v", s)
	}
	st := stats(t, q)
	if st.Committed != 2 || st.Pending != 3 || st.InFlight != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The same step again, as after a lost reply: nothing more recorded,
	// and it claims nothing (the group is in flight).
	s = mustStep(t, q, done)
	if s.applied[0] || len(s.claimed) != 0 {
		t.Fatalf("resent: %+v, want nothing applied or claimed", s)
	}
	if st2 := stats(t, q); st2.Committed != st.Committed || st2.Pending != st.Pending || st2.InFlight != st.InFlight {
		t.Fatalf("a resent step changed the stats: %+v, was %+v", st2, st)
	}
	// The claim the first send made is this leadership's but no run of it
	// executes: recover releases it, and the claim after takes it as a
	// first delivery.
	s = mustStep(t, q, stepArgs{token: token, want: 1, runMax: 2, recover: true})
	if len(s.claimed) != 1 || s.claimed[0].jobs[0].ID != ids[2] || s.claimed[0].jobs[0].Attempt != 1 || s.claimed[0].jobs[1].Attempt != 1 {
		t.Fatalf("after recover: %+v", s.claimed)
	}
	// Held runs are kept: recover with the group held releases nothing.
	s = mustStep(t, q, stepArgs{token: token, want: 1, runMax: 2, recover: true, held: []string{memberSerial}})
	if len(s.claimed) != 0 || stats(t, q).InFlight != 1 {
		t.Fatalf("a held run was released: %+v", s)
	}
	// Another leadership's first step finds it lost: one delivery each.
	s = mustStep(t, q, stepArgs{token: becomeLeader(t, e.c), want: 1, runMax: 2, recover: true})
	if len(s.claimed) != 1 || len(s.claimed[0].jobs) != 1 || s.claimed[0].jobs[0].ID != ids[2] || s.claimed[0].jobs[0].Attempt != 2 {
		t.Fatalf("the next leader claimed %+v, want job 2 alone as its second delivery", s.claimed)
	}
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// A leader that finds a newer leader's write, before or after a job, stops
// with ErrStaleToken and leaves no trace.
func TestStaleLeaderProcess(t *testing.T) {
	t.Parallel()
	t.Run("at start", func(t *testing.T) {
		e := newEnv(t)
		ran := false
		q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error { ran = true; return nil }), nil)
		e.enqueue(t, q, 2)
		old := becomeLeader(t, e.c)
		takeOver(t, q.Queue)
		before := snapshot(t, e.c, q.Queue)
		err := q.Process(t.Context(), newLease(old, time.Minute))
		if !errors.Is(err, ErrStaleToken) {
			t.Fatalf("Process: %v, want ErrStaleToken", err)
		}
		if ran || !maps.Equal(before, snapshot(t, e.c, q.Queue)) {
			t.Fatal("a stale leader ran a job or changed the queue")
		}
	})
	t.Run("mid job", func(t *testing.T) {
		e := newEnv(t)
		var q *testQueue
		q = e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
			takeOver(t, q.Queue) // a new leader appears and claims while this one works
			return nil
		}), nil)
		e.enqueue(t, q, 2)
		old := becomeLeader(t, e.c)
		before := stats(t, q)
		err := q.Process(t.Context(), newLease(old, time.Minute))
		if !errors.Is(err, ErrStaleToken) {
			t.Fatalf("Process: %v, want ErrStaleToken", err)
		}
		after := stats(t, q)
		if after.Committed != 0 || after.Pending != before.Pending || lastCommitted(t, q) != "" {
			t.Fatalf("stale commit left a trace: %+v", after)
		}
	})
	t.Run("handler reports stale", func(t *testing.T) {
		e := newEnv(t)
		q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
			return e.store.write(ctx, j.ID, lease.Token())
		}), nil)
		e.enqueue(t, q, 1)
		old := becomeLeader(t, e.c)
		if err := e.store.write(t.Context(), "other", old+1); err != nil {
			t.Fatal(err)
		}
		err := q.Process(t.Context(), newLease(old, time.Minute))
		if !errors.Is(err, ErrStaleToken) {
			t.Fatalf("Process: %v, want ErrStaleToken from the handler's store", err)
		}
		if s := stats(t, q); s.Committed != 0 || s.DeadLettered != 0 || s.Pending != 1 || s.Parked != 0 {
			t.Fatalf("stats %+v", s)
		}
		if v := e.c.HGet(t.Context(), q.stale, stats0(t, q)).Val(); v != "1 "+strconv.FormatInt(old, 10) {
			t.Fatalf("stale count %q, want one leadership, token %d", v, old)
		}
	})
}

// stats0 is the ID of the first unfinished job.
func stats0(t testing.TB, q *testQueue) string {
	t.Helper()
	jobs, err := q.Unfinished(t.Context())
	if err != nil || len(jobs) == 0 {
		t.Fatalf("unfinished jobs: %v, %v", jobs, err)
	}
	return jobs[0].ID
}

// A job that always fails is retried MaxAttempts times on its key alone,
// then its key is parked with it and every later job of the key, while
// other keys flow. Retry runs it again with fresh attempts; once it
// passes, the held jobs follow in order.
func TestPoisonJobParksItsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var poisonAttempts []int
	healed := false
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		mu.Lock()
		defer mu.Unlock()
		if string(j.Payload) == "poison" && !healed {
			poisonAttempts = append(poisonAttempts, j.Attempt)
			return errors.New("boom: cannot digest")
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.MaxAttempts = 4 })
	a := e.enqueueKey(t, q, "a", "a", 1)
	poison, err := q.Enqueue(t.Context(), "a", []byte("poison"))
	if err != nil {
		t.Fatal(err)
	}
	held := e.enqueueKey(t, q, "a", "later ", 2)
	b := e.enqueueKey(t, q, "b", "b", 3)
	token := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(token, time.Minute))
	poll.Until(t, 5*time.Second, "a parked key", func() bool { return stats(t, q).Parked == 1 })
	waitCommitted(t, q, 4)
	more := e.enqueueKey(t, q, "a", "after park ", 1) // held too

	mu.Lock()
	if !slices.Equal(poisonAttempts, []int{1, 2, 3, 4}) {
		t.Fatalf("poison attempts %v, want 1..4", poisonAttempts)
	}
	mu.Unlock()
	got, _ := effectIDs(t, e)
	if want := append(slices.Clone(a), b...); !sameSet(got, want) {
		t.Fatalf("effects %v, want a's first job and b's jobs only", got)
	}
	ps, err := q.Parked(t.Context())
	if err != nil || len(ps) != 1 {
		t.Fatalf("parked %+v, %v", ps, err)
	}
	if p := ps[0]; p.Key != "a" || p.JobID != poison || p.Held != 4 || p.Attempts != 4 || p.Token != token ||
		!strings.Contains(p.Error, "boom: cannot digest") || time.Since(p.ParkedAt) > time.Minute {
		t.Fatalf("parked key %+v", p)
	}
	if s := stats(t, q); s.Pending != 4 || s.DeadLettered != 0 || s.OldestParkedMs <= 0 || s.Retries != 3 {
		t.Fatalf("stats %+v", s)
	}

	mu.Lock()
	healed = true
	mu.Unlock()
	if _, err := q.Retry(t.Context(), Ref{Key: "b"}); !errors.Is(err, ErrNotParked) {
		t.Fatalf("Retry of a key that is not parked: %v", err)
	}
	id, err := q.Retry(t.Context(), Ref{Key: "a"})
	if err != nil || id != poison {
		t.Fatalf("Retry: %q, %v", id, err)
	}
	waitCommitted(t, q, 8)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, _ = effectIDs(t, e)
	var ofA []string
	for _, id := range got {
		if !slices.Contains(b, id) {
			ofA = append(ofA, id)
		}
	}
	if want := slices.Concat(a, []string{poison}, held, more); !slices.Equal(ofA, want) {
		t.Fatalf("a's effects %v, want %v: in order", ofA, want)
	}
	if s := stats(t, q); s.Pending != 0 || s.Parked != 0 || s.OldestParkedMs != 0 {
		t.Fatalf("stats %+v", s)
	}
	noAttemptsLeft(t, e, q)
}

// sameSet: a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// With OnFailure dead-letter (the order-breaking opt-in) a job that always
// fails is dead-lettered with its error after MaxAttempts, and the jobs
// after it complete. Requeue puts it back at the head of its key.
func TestPoisonJobDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var poisonAttempts []int
	healed := false
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		mu.Lock()
		defer mu.Unlock()
		if string(j.Payload) == "poison" && !healed {
			poisonAttempts = append(poisonAttempts, j.Attempt)
			return errors.New("boom: cannot digest")
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.MaxAttempts = 4; c.OnFailure = FailureDeadLetter })
	a := e.enqueue(t, q, 1)
	poison, err := q.Enqueue(t.Context(), "", []byte("poison"))
	if err != nil {
		t.Fatal(err)
	}
	b := e.enqueue(t, q, 2)
	token := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(token, time.Minute))
	waitCommitted(t, q, 3)
	poll.Until(t, 5*time.Second, "a dead letter", func() bool { return stats(t, q).DeadLettered == 1 })

	mu.Lock()
	if !slices.Equal(poisonAttempts, []int{1, 2, 3, 4}) {
		t.Fatalf("poison attempts %v, want 1..4", poisonAttempts)
	}
	healed = true
	mu.Unlock()
	got, _ := effectIDs(t, e)
	if want := append(a, b...); !slices.Equal(got, want) {
		t.Fatalf("effects %v, want %v", got, want)
	}
	dl, err := q.DeadLetters(t.Context(), 10)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
	d := dl[0]
	if d.ID != poison || string(d.Payload) != "poison" || d.Attempts != 4 || d.Token != token || d.Key != "" ||
		!strings.Contains(d.Error, "boom: cannot digest") || d.FailedAt.IsZero() || d.EnqueuedAt.IsZero() || d.SkippedBy != "" {
		t.Fatalf("dead letter %+v", d)
	}
	if s := stats(t, q); s.Pending != 0 || lastCommitted(t, q) != b[1] || s.Parked != 0 {
		t.Fatalf("stats %+v", s)
	}

	newID, err := q.Requeue(t.Context(), poison)
	if err != nil || newID == poison {
		t.Fatalf("Requeue: %q, %v", newID, err)
	}
	waitCommitted(t, q, 4)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, q); s.DeadLettered != 0 || lastCommitted(t, q) != newID {
		t.Fatalf("after requeue %+v, want the requeued job %s committed", s, newID)
	}
	if _, err := q.Requeue(t.Context(), poison); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Requeue: %v, want ErrNotFound", err)
	}
}

// A job whose leaders keep dying under it fails for good once it has
// been delivered MaxAttempts times, across leaders: its key parks without
// running it again.
func TestAttemptsSurviveLeaderChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var started chan int
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if string(j.Payload) == "hangs" {
			started <- j.Attempt
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}), func(c *WorkerConfig) { c.MaxAttempts = 2 })
	hangs, err := q.Enqueue(t.Context(), "k", []byte("hangs"))
	if err != nil {
		t.Fatal(err)
	}
	e.enqueue(t, q, 1)
	for want := 1; want <= 2; want++ {
		started = make(chan int, 1)
		stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
		select {
		case got := <-started:
			if got != want {
				t.Fatalf("attempt %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("job not started")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	started = make(chan int, 1)
	token := becomeLeader(t, e.c)
	stop, _ := process(t, q, newLease(token, time.Minute))
	waitCommitted(t, q, 1)
	poll.Until(t, 5*time.Second, "k parked", func() bool { return stats(t, q).Parked == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(started) != 0 {
		t.Fatal("the job ran a third time")
	}
	ps, err := q.Parked(t.Context())
	if err != nil || len(ps) != 1 || ps[0].JobID != hangs || ps[0].Attempts != 2 || ps[0].Token != token || !strings.Contains(ps[0].Error, "none finished") {
		t.Fatalf("parked %+v, %v", ps, err)
	}
}

// Once the lease is no longer valid, Process takes no more jobs and does
// not commit the one in hand.
func TestProcessStopsWhenLeaseInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lease := newLease(0, time.Minute)
	var ids []string
	var ran []string
	var mu sync.Mutex
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, _ Lease) error {
		mu.Lock()
		ran = append(ran, j.ID)
		mu.Unlock()
		if j.ID == ids[2] {
			lease.revoked.Store(true) // e.g. the process was paused past its deadline
		}
		return nil
	}), nil)
	ids = e.enqueue(t, q, 5)
	lease.token = becomeLeader(t, e.c)
	err := q.Process(t.Context(), lease)
	if !errors.Is(err, ErrLeaseInvalid) {
		t.Fatalf("Process: %v, want ErrLeaseInvalid", err)
	}
	if !slices.Equal(ran, ids[:3]) {
		t.Fatalf("ran %v, want the first 3 only", ran)
	}
	if s := stats(t, q); s.Committed != 2 || lastCommitted(t, q) != ids[1] {
		t.Fatalf("stats %+v, want job 2 (in hand when the lease ended) uncommitted", s)
	}
}

// A job interrupted by the end of leadership (the leadership context,
// which package leader cancels at the lease deadline) is not recorded, and
// Process returns without error: the next leader delivers it again.
func TestJobInterruptedAtLeaseEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}), nil)
	e.enqueue(t, q, 1)
	lease := newLease(becomeLeader(t, e.c), 100*time.Millisecond)
	ctx, cancel := context.WithDeadline(t.Context(), lease.Deadline())
	defer cancel()
	if err := q.Process(ctx, lease); err != nil {
		t.Fatalf("Process: %v, want nil once its context ended", err)
	}
	if s := stats(t, q); s.Committed != 0 || s.DeadLettered != 0 || s.Pending != 1 {
		t.Fatalf("an interrupted job was recorded: %+v", s)
	}
}

// A handler that finishes just as work is stopped gets its job committed
// while the lease is still valid, so the next leader does not redo it.
func TestFinishedJobCommittedOnStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error {
		cancel() // StopWork arrives while the job completes
		return nil
	}), nil)
	ids := e.enqueue(t, q, 2)
	if err := q.Process(ctx, newLease(becomeLeader(t, e.c), time.Minute)); err != nil {
		t.Fatalf("Process: %v", err)
	}
	if s := stats(t, q); s.Committed != 1 || lastCommitted(t, q) != ids[0] {
		t.Fatalf("stats %+v, want the finished job committed and no other started", s)
	}
}

// A Redis outage does not end Process; it resumes when Redis is back.
func TestProcessSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	s := newEnv(t)
	srv := s.srv
	q := s.queue(t, HandlerFunc(noop), func(c *WorkerConfig) { c.Backoff.Max = 50 * time.Millisecond })
	token := becomeLeader(t, s.c)
	stop, done := process(t, q, newLease(token, time.Minute))
	s.enqueue(t, q, 3)
	waitCommitted(t, q, 3)
	srv.Kill()
	srv.Restart() // empty now: no persistence in this server
	if err := s.c.Set(t.Context(), testKeys.Epoch(), token, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.enqueue(t, q, 2)
	waitCommitted(t, q, 2)
	select {
	case err := <-done:
		t.Fatalf("Process returned during the outage: %v", err)
	default:
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestThousandJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	const n = 1000
	e.enqueue(t, q, n)
	start := time.Now()
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, n)
	took := time.Since(start)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d no-op jobs in %s (%.0f jobs/s)", n, took.Round(time.Millisecond), n/took.Seconds())
	if s := stats(t, q); s.Pending != 0 || s.Committed != n {
		t.Fatalf("stats %+v", s)
	}
}

// BenchmarkProcessNoop is one job per round trip (Batch 1): each step
// commits a job and claims the next. Read its jobs/s against
// BenchmarkRedisRoundTrip's rtt/s from the same run.
func BenchmarkProcessNoop(b *testing.B) { benchNoop(b, 1) }

// BenchmarkProcessNoopBatched is group commit at the default batch size
// (DefaultBatch): one step commits a batch and claims the next.
func BenchmarkProcessNoopBatched(b *testing.B) { benchNoop(b, DefaultBatch) }

// BenchmarkBatchSize is the measurement behind DefaultBatch: jobs/s of
// no-op jobs per batch size (go test -bench BatchSize ./internal/jobs).
func BenchmarkBatchSize(b *testing.B) {
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) { benchNoop(b, n) })
	}
}

// benchNoop runs b.N no-op jobs, enqueued beforehand, through Process
// with the given batch size and reports jobs/s.
func benchNoop(b *testing.B, batch int) { benchJobs(b, HandlerFunc(noop), batch) }

// benchJobs runs b.N jobs with empty payloads, enqueued beforehand in one
// group (the serial queue: a deep queue), through Process with h and the
// given batch size and reports jobs/s.
func benchJobs(b *testing.B, h Handler, batch int) {
	e := newEnv(b)
	benchJobsOn(b, e, Config{Client: e.c, Keys: testKeys}, h, batch)
}

// benchJobsOn is benchJobs on e with the queue's config qc.
func benchJobsOn(b *testing.B, e *env, qc Config, h Handler, batch int) {
	q := e.queueOf(b, qc, h, func(c *WorkerConfig) { c.Batch = batch })
	token := becomeLeader(b, e.c)
	ctx := context.Background()
	fillQueue(b, e, q.Queue, b.N) // outside the timer
	b.ResetTimer()
	stop, _ := process(b, q, newLease(token, time.Hour))
	poll.Until(b, 10*time.Minute, "all commits", func() bool {
		s, err := q.Stats(ctx)
		return err == nil && s.Committed >= int64(b.N)
	})
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// fillQueue adds n no-op jobs to q's serial group, in pipelines of
// 10,000, and makes the group ready.
func fillQueue(b *testing.B, e *env, q *Queue, n int) {
	b.Helper()
	ctx := context.Background()
	list := q.group(memberSerial)
	for done := 0; done < n; {
		pipe := e.c.Pipeline()
		for range min(n-done, 10000) {
			pipe.RPush(ctx, list, encodeEntry(fmt.Sprintf("%026d", done), 0, entryMeta{}, "", nil))
			done++
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.c.ZAdd(ctx, q.ready, redis.Z{Score: 0, Member: memberSerial}).Err(); err != nil {
		b.Fatal(err)
	}
	if err := e.c.HIncrBy(ctx, q.counters, "pending", int64(n)).Err(); err != nil {
		b.Fatal(err)
	}
}

// floorScript is the least a fenced, ordered commit of one job can do in
// Redis: refuse a token below the fence, refuse a commit that is not of
// the job after the committed count, pop it, count it. It keeps no
// claims, attempts, counters or last-commit record, all of which step.lua
// does; it exists only for BenchmarkStepFloor.
// failoverScript stands in for a failover to a replica that missed the
// latest writes, in one atomic step: every key of a lease's keyspace but
// the lock's own is replaced by the dumped state. Standalone only.
// ARGV[1] the keyspace's prefix; ARGV[2..5] the lock's own keys (kept);
// then pairs of key and DUMP payload.
var failoverScript = redis.NewScript(`
local keep = {}
for i = 2, 5 do keep[ARGV[i]] = true end
for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do
	if not keep[k] then redis.call('DEL', k) end
end
for i = 6, #ARGV, 2 do
	redis.call('RESTORE', ARGV[i], 0, ARGV[i + 1], 'REPLACE')
end
return 0
`)

var floorScript = redis.NewScript(`
if tonumber(ARGV[1]) < tonumber(redis.call('GET', KEYS[1]) or '0') then return 0 end
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[2] then return -1 end
redis.call('LPOP', KEYS[3])
redis.call('INCR', KEYS[2])
return 1`)

// BenchmarkStepFloor is the ceiling of one job per round trip on this
// machine and Redis, beside BenchmarkProcessNoop: the same client sends
// floorScript to commit job i with the LINDEX that reads job i+1
// pipelined behind it, and decodes the entry, as the worker's loop does
// with step.lua, but with no handler and no Worker. Its jobs/s ÷
// BenchmarkRedisRoundTrip's rtt/s bounds what any fenced, ordered queue on
// a Redis list reaches with one round trip per job.
func BenchmarkStepFloor(b *testing.B) {
	e := newEnv(b)
	q := e.queue(b, HandlerFunc(noop), nil)
	ctx := context.Background()
	fillQueue(b, e, q.Queue, b.N+1)
	const token = 7
	if err := e.c.Set(ctx, q.fence, token, 0).Err(); err != nil {
		b.Fatal(err)
	}
	if err := floorScript.Load(ctx, e.c).Err(); err != nil {
		b.Fatal(err)
	}
	list, count := q.group(memberSerial), q.Queue.cfg.Keys.Group("floor")
	keys := []string{q.fence, count, list}
	b.ResetTimer()
	for i := range b.N {
		pipe := e.c.Pipeline()
		run := pipe.EvalSha(ctx, floorScript.Hash(), keys, token, i)
		read := pipe.LIndex(ctx, list, 0)
		_, _ = pipe.Exec(ctx)
		if v, err := run.Int64(); err != nil || v != 1 {
			b.Fatalf("job %d: commit %d, %v", i, v, err)
		}
		next, err := read.Result()
		if err != nil {
			b.Fatalf("job %d: claim %v", i, err)
		}
		if _, _, err := decodeEntry(next); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkRedisRoundTrip is the physical limit beside BenchmarkProcessNoop:
// one PING on the same kind of client. With one job per round trip,
// jobs/s stays below these round trips/s by the step script's own time
// in Redis; group commit goes past them.
func BenchmarkRedisRoundTrip(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := e.c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rtt/s")
}

// TestEnqueueNoticeWakesIdleLeader: an idle leader that would next poll in
// an hour takes a new job at once, woken by the enqueue notice.
func TestEnqueueNoticeWakesIdleLeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), func(c *WorkerConfig) { c.PollInterval = time.Hour })
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		notice.Watch(ctx, notice.Source{Subscribe: e.c.Subscribe}, map[string]func(){q.EnqueuedChannel(): q.Notify}, nil)
	}()
	t.Cleanup(func() { cancel(); <-watched })
	poll.Until(t, 5*time.Second, "the subscription", func() bool {
		return e.c.PubSubNumSub(t.Context(), q.EnqueuedChannel()).Val()[q.EnqueuedChannel()] == 1
	})
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	t.Cleanup(func() { _ = stop() })
	// Wait until the first claim has run (and found nothing), so the job
	// below can only be taken after the idle wait: by the notice.
	poll.Until(t, 5*time.Second, "the first claim", func() bool { return scriptCalls(t, e.c) >= 1 })
	e.enqueue(t, q, 1)
	waitCommitted(t, q, 1) // bounded at 20s, far below the hour's poll
}

// scriptCalls is how many EVAL and EVALSHA calls the server has executed.
func scriptCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls="); ok {
				v, _, _ := strings.Cut(rest, ",")
				k, _ := strconv.Atoi(v)
				n += k
			}
		}
	}
	return n
}

// TestResumesAfterLostCommits: a Redis failover can lose a leader's last
// commits (async replication): the store's position goes back under a
// running leader. Its next commit is then out of order; Process resumes
// from the store's position instead of stopping, so the jobs whose
// commits were lost run again and every job ends committed.
func TestResumesAfterLostCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var ran []string
	var before map[string]string // the queue's keys before any commit
	var q *testQueue
	lost := false
	q = e.queue(t, HandlerFunc(func(ctx context.Context, j Job, _ Lease) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, string(j.Payload))
		if string(j.Payload) == "job 1" && !lost {
			// Put back the state from before job 0 was committed, as a
			// promoted replica that missed the commit would have it: at
			// once, as a failover switches, so the worker's steps, which
			// go on while this job runs, never see half of it (a key
			// deleted and not yet restored, or one written in between
			// and left).
			lost = true
			k := q.Queue.cfg.Keys
			args := []any{k.Lock(), k.Lock(), k.Epoch(), k.EpochLast(), k.Fence()}
			for key, dump := range before {
				args = append(args, key, dump)
			}
			if err := failoverScript.Run(ctx, e.c, nil, args...).Err(); err != nil {
				return err
			}
		}
		return nil
	}), nil)
	e.enqueue(t, q, 3)
	before = snapshot(t, e.c, q.Queue)
	_, done := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 3)
	select {
	case err := <-done:
		t.Fatalf("Process returned %v after the position went back", err)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(ran, ","); got != "job 0,job 1,job 0,job 1,job 2" {
		t.Fatalf("handler ran %s; want job 0 and 1 again after the lost commit, then job 2", got)
	}
	if s := stats(t, q); s.Pending != 0 {
		t.Fatalf("stats %+v, want nothing pending", s)
	}
}
