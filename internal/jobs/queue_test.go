package jobs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	if w.cfg.MaxAttempts != 5 || w.cfg.Backoff != (backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}) ||
		w.cfg.PollInterval != 500*time.Millisecond || w.cfg.Logger == nil {
		t.Fatalf("defaults not applied: %+v", w.cfg)
	}
}

func TestEnqueueAndStats(t *testing.T) {
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

// The core promise: every job, in enqueue order, exactly once, with the
// payload as enqueued.
func TestProcessInOrder(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	payloads := map[string]string{}
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		mu.Lock()
		payloads[j.ID] = string(j.Payload)
		mu.Unlock()
		if j.Attempt != 1 {
			t.Errorf("job %s attempt %d, want 1", j.ID, j.Attempt)
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), nil)
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
	if payloads[ids[7]] != "job 7" {
		t.Fatalf("payload of job 7 = %q", payloads[ids[7]])
	}
	s := stats(t, q)
	if s.Pending != 0 || s.Committed != 55 || lastCommitted(t, q) != ids[len(ids)-1] || s.DeadLettered != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

// Leader 1 dies mid-job; leader 2 resumes right after the last committed
// job. Only the in-flight job's effect repeats, and every job is committed
// exactly once, in order.
func TestLeaderChangeResumes(t *testing.T) {
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
// leader's first claim), whatever it carries (a commit and a claim, a
// batch commit, a dead letter, given-back deliveries, a claim alone), is
// rejected with ErrStaleToken and changes nothing at all.
func TestStaleTokenLeavesNoTrace(t *testing.T) {
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	ctx := t.Context()
	e.enqueue(t, q, 4)
	old := becomeLeader(t, e.c)
	s := mustStep(t, q, old, batch{}, 1, recordNone)
	first := s.claimed[0]
	s = mustStep(t, q, old, batch{from: s.position, done: []outcome{{e: first, attempts: 1}}}, 2, recordOK)
	if len(s.claimed) != 2 {
		t.Fatalf("claimed %d, want 2", len(s.claimed))
	}
	from, second, third := s.position, s.claimed[0], s.claimed[1]
	newer := becomeLeader(t, e.c)
	if again, err := q.claim(ctx, newer); err != nil || again == nil || again.streamID != second.streamID {
		t.Fatalf("the newer leader's claim: %v, %v; want the job in flight", again, err)
	}

	before := snapshot(t, e.c, q.Queue)
	statsBefore := stats(t, q)
	for _, c := range []struct {
		name  string
		b     batch
		claim int
	}{
		{"commit and claim", batch{from: from, done: []outcome{{e: second, attempts: 1}}}, 1},
		{"batch commit", batch{from: from, done: []outcome{{e: second, attempts: 1}, {e: third, attempts: 1}}}, 4},
		{"dead-letter", batch{from: from, done: []outcome{{e: second, attempts: 1, cause: "boom"}}, unstarted: []*entry{third}}, 1},
		{"give back", batch{from: from, unstarted: []*entry{second, third}}, 0},
		{"claim", batch{}, 4},
	} {
		_, err := q.step(ctx, old, c.b, c.claim)
		var se *StaleError
		if !errors.Is(err, ErrStaleToken) || !errors.As(err, &se) || se.Token != old || se.Epoch != newer {
			t.Fatalf("%s with token %d at epoch %d: %v, want ErrStaleToken", c.name, old, newer, err)
		}
	}
	if after := snapshot(t, e.c, q.Queue); !maps.Equal(before, after) {
		t.Fatalf("a stale write changed the queue:\nbefore %v\nafter  %v", keys(before), keys(after))
	}
	st := stats(t, q)
	st.OldestPendingMs, statsBefore.OldestPendingMs = 0, 0 // the oldest job waits on
	if st != statsBefore || st.Committed != 1 || st.DeadLettered != 0 {
		t.Fatalf("stats after stale writes %+v, before %+v", st, statsBefore)
	}
	if dl, err := q.DeadLetters(ctx, 0); err != nil || len(dl) != 0 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}

	// The current token commits, and a resent step is harmless.
	b := batch{from: from, done: []outcome{{e: second, attempts: 1}}}
	mustStep(t, q, newer, b, 0, recordOK)
	mustStep(t, q, newer, b, 0, recordDone)
	if st := stats(t, q); st.Committed != 2 || st.Pending != 2 {
		t.Fatalf("stats %+v, want 2 committed 2 pending", st)
	}
	// Recording out of order is refused and records nothing: jobs claimed
	// after an older position, or after one the queue never had.
	for _, b := range []batch{
		{from: from, done: []outcome{{e: third, attempts: 1}}},
		{from: "1-1", done: []outcome{{e: third, attempts: 1}}},
	} {
		s := mustStep(t, q, newer, b, 1, recordOrder)
		if len(s.claimed) != 1 || s.claimed[0].streamID != third.streamID || s.position != second.streamID {
			t.Fatalf("after an out-of-order record: %+v, want the third job claimed after position %s", s, second.streamID)
		}
	}
	if st := stats(t, q); st.Committed != 2 || st.Pending != 2 {
		t.Fatalf("stats %+v, want 2 committed 2 pending", st)
	}
}

// mustStep runs one step and checks what it recorded.
func mustStep(t testing.TB, q *testQueue, token int64, b batch, claim int, want record) stepped {
	t.Helper()
	s, err := q.step(t.Context(), token, b, claim)
	if err != nil {
		t.Fatal(err)
	}
	if s.record != want {
		t.Fatalf("step recorded %s, want %s", s.record, want)
	}
	return s
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// A leader that finds a newer leader's write, before or after a job, stops
// with ErrStaleToken and leaves no trace.
func TestStaleLeaderProcess(t *testing.T) {
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
		if s := stats(t, q); s.Committed != 0 || s.DeadLettered != 0 || s.Pending != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// A job that always fails is retried MaxAttempts times, dead-lettered with
// its error, and the jobs after it complete. Requeue puts it back.
func TestPoisonJob(t *testing.T) {
	e := newEnv(t)
	var poison string
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
	var got []string
	for _, ef := range e.store.effects(t) {
		got = append(got, ef.id)
	}
	if want := append(a, b...); !slices.Equal(got, want) {
		t.Fatalf("effects %v, want %v", got, want)
	}
	dl, err := q.DeadLetters(t.Context(), 10)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
	d := dl[0]
	if d.ID != poison || string(d.Payload) != "poison" || d.Attempts != 4 || d.Token != token ||
		!strings.Contains(d.Error, "boom: cannot digest") || d.FailedAt.IsZero() || d.EnqueuedAt.IsZero() {
		t.Fatalf("dead letter %+v", d)
	}
	if s := stats(t, q); s.Pending != 0 || lastCommitted(t, q) != b[1] {
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

// A job whose leaders keep dying under it is dead-lettered once it has
// been delivered MaxAttempts times, across leaders.
func TestAttemptsSurviveLeaderChanges(t *testing.T) {
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
	if _, err := q.Enqueue(t.Context(), "", []byte("hangs")); err != nil {
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
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(started) != 0 {
		t.Fatal("the job ran a third time")
	}
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 1 || dl[0].Attempts != 2 || dl[0].Token != token || !strings.Contains(dl[0].Error, "none finished") {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	noAttemptsLeft(t, e, q)
}

// Once the lease is no longer valid, Process takes no more jobs and does
// not commit the one in hand.
func TestProcessStopsWhenLeaseInvalid(t *testing.T) {
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

// benchJobs runs b.N jobs with empty payloads, enqueued beforehand,
// through Process with h and the given batch size and reports jobs/s.
func benchJobs(b *testing.B, h Handler, batch int) {
	e := newEnv(b)
	q := e.queue(b, h, func(c *WorkerConfig) { c.Batch = batch })
	token := becomeLeader(b, e.c)
	ctx := context.Background()
	fillQueue(b, e, q.stream, b.N) // outside the timer
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

// fillQueue adds n no-op job entries to stream, in pipelines of 10,000.
func fillQueue(b *testing.B, e *env, stream string, n int) {
	b.Helper()
	ctx := context.Background()
	for left := n; left > 0; left -= 10000 {
		pipe := e.c.Pipeline()
		for range min(left, 10000) {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"id", "x", "payload", "", "enqueued_at", "0"}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// floorScript is the least a fenced, ordered commit of one job can do in
// Redis: refuse a token below the fence, refuse a commit that is not of
// the entry after the committed position, move the position. It keeps no
// attempts, counters, claim mark or last-commit record and trims nothing,
// all of which step.lua does; it exists only for BenchmarkStepFloor.
var floorScript = redis.NewScript(`
if tonumber(ARGV[1]) < tonumber(redis.call('GET', KEYS[1]) or '0') then return 0 end
if (redis.call('GET', KEYS[2]) or '0-0') ~= ARGV[2] then return -1 end
redis.call('SET', KEYS[2], ARGV[3])
return 1`)

// BenchmarkStepFloor is the ceiling of one job per round trip on this
// machine and Redis, beside BenchmarkProcessNoop: the same client sends
// floorScript to commit job i with the XRANGE that claims job i+1
// pipelined behind it, and decodes the entry, as the worker's loop does
// with step.lua, but with no handler and no Worker. Its jobs/s ÷
// BenchmarkRedisRoundTrip's rtt/s bounds what any fenced, ordered queue on
// a Redis stream reaches with one round trip per job.
func BenchmarkStepFloor(b *testing.B) {
	e := newEnv(b)
	q := e.queue(b, HandlerFunc(noop), nil)
	ctx := context.Background()
	fillQueue(b, e, q.stream, b.N+1)
	const token = 7
	if err := e.c.Set(ctx, q.fence, token, 0).Err(); err != nil {
		b.Fatal(err)
	}
	if err := floorScript.Load(ctx, e.c).Err(); err != nil {
		b.Fatal(err)
	}
	first, err := e.c.XRangeN(ctx, q.stream, "-", "+", 1).Result()
	if err != nil || len(first) != 1 {
		b.Fatalf("first entry: %v %v", first, err)
	}
	keys := []string{q.fence, q.position}
	pos, cur := "0-0", first[0].ID
	b.ResetTimer()
	for i := range b.N {
		pipe := e.c.Pipeline()
		run := pipe.EvalSha(ctx, floorScript.Hash(), keys, token, pos, cur)
		read := pipe.Do(ctx, "XRANGE", q.stream, "("+cur, "+", "COUNT", 1)
		_, _ = pipe.Exec(ctx)
		if v, err := run.Int64(); err != nil || v != 1 {
			b.Fatalf("job %d: commit %d, %v", i, v, err)
		}
		next, err := read.Slice()
		if err != nil || len(next) != 1 {
			b.Fatalf("job %d: claim %v, %v", i, next, err)
		}
		ent, err := parseEntry(next[0])
		if err != nil {
			b.Fatal(err)
		}
		pos, cur = cur, ent.streamID
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
			// promoted replica that missed the commit would have it.
			lost = true
			for k := range snapshot(t, e.c, q.Queue) {
				e.c.Del(ctx, k)
			}
			for k, v := range before {
				if err := e.c.RestoreReplace(ctx, k, 0, v).Err(); err != nil {
					return err
				}
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
