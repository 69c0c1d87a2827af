package jobs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a queue's clock the test sets.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t.Truncate(time.Millisecond)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// delay enqueues a job of key with payload p due at due.
func delay(t testing.TB, q *testQueue, key, p string, due time.Time) string {
	t.Helper()
	r, err := q.EnqueueItem(t.Context(), Item{Key: key, Payload: []byte(p), NotBefore: due})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// claimed is the payloads of a step's claimed runs, by group.
func claimedPayloads(s stepReply) map[string][]string {
	out := map[string][]string{}
	for _, c := range s.claimed {
		for _, j := range c.jobs {
			out[c.member] = append(out[c.member], string(j.Payload))
		}
	}
	return out
}

// A delayed job is kept apart until its due time, by the leader's clock:
// a step a millisecond before moves and claims nothing. At its due time it
// joins its key's order as if enqueued then: after a job enqueued before
// it, before one enqueued after it (while it waited), and jobs due at one
// time in the order they were enqueued. It never holds its key's other
// jobs back.
func TestDelayedJoinsItsKeyAtItsDueTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := newClock(start)
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Now: clk.Now}, HandlerFunc(noop), nil)
	due := start.Add(time.Minute)
	e.enqueueKey(t, q, "a", "before-", 1) // place: 10:00
	delay(t, q, "a", "late", due.Add(time.Second))
	delay(t, q, "a", "due-1", due)
	delay(t, q, "a", "due-2", due) // the same due time: after due-1, its elder
	if st := stats(t, q); st.Delayed != 3 || st.Pending != 1 {
		t.Fatalf("stats %+v, want 3 delayed, 1 pending", st)
	}
	token := becomeLeader(t, e.c)
	// The key's job enqueued at once runs: the delayed ones hold nothing.
	s := mustStep(t, q, stepArgs{token: token, want: 1, runMax: 10, recover: true})
	if got := claimedPayloads(s)["k:a"]; !slices.Equal(got, []string{"before-0"}) || !s.nextTime.Equal(due) {
		t.Fatalf("claimed %v, next time %s; want before-0 alone, next time %s", got, s.nextTime, due)
	}
	mustStep(t, q, stepArgs{token: token, outcomes: []outcome{committed(s.claimed[0])}})
	clk.Set(due.Add(-30 * time.Second))
	e.enqueueKey(t, q, "a", "meanwhile-", 1) // place: 10:00:30, before the due time
	clk.Set(due.Add(time.Second / 2))
	e.enqueueKey(t, q, "a", "after-", 1) // place: 10:01:00.5, after it
	clk.Set(due.Add(-time.Millisecond))
	s = mustStep(t, q, stepArgs{token: token, want: 1, runMax: 1})
	if got := claimedPayloads(s)["k:a"]; !slices.Equal(got, []string{"meanwhile-0"}) {
		t.Fatalf("a millisecond before the due time claimed %v, want meanwhile-0 alone", got)
	}
	if n, _ := e.c.ZCard(t.Context(), q.delayed).Result(); n != 3 {
		t.Fatalf("%d delayed left a millisecond before the due time, want 3", n)
	}
	mustStep(t, q, stepArgs{token: token, outcomes: []outcome{committed(s.claimed[0])}})
	clk.Set(due.Add(2 * time.Second))
	s = mustStep(t, q, stepArgs{token: token, want: 1, runMax: 10})
	want := []string{"due-1", "due-2", "after-0", "late"}
	if got := claimedPayloads(s)["k:a"]; !slices.Equal(got, want) {
		t.Fatalf("once due, key a runs %v, want %v", got, want)
	}
	for _, j := range s.claimed[0].jobs {
		if string(j.Payload) == "after-0" != j.DueAt.IsZero() {
			t.Errorf("%s: DueAt %s", j.Payload, j.DueAt)
		}
	}
	if st := stats(t, q); st.Delayed != 0 || st.Pending != 4 || !s.nextTime.IsZero() {
		t.Fatalf("stats %+v, next time %s; want none delayed, 4 pending, no next time", st, s.nextTime)
	}
}

// A delayed job never goes before its key's run in flight, its parked
// head, or a head that backs off after a failure, though due before
// them: those jobs were delivered already.
func TestDelayedNeverGoesBeforeWhatRan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := newClock(start)
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Now: clk.Now}, HandlerFunc(noop), nil)
	token := becomeLeader(t, e.c)
	early := start.Add(time.Second)
	for _, key := range []string{"flight", "park", "retry"} {
		delay(t, q, key, key+"-delayed", early)
	}
	clk.Set(start.Add(time.Minute))
	for _, key := range []string{"flight", "park", "retry"} {
		e.enqueueKey(t, q, key, key+"-", 2) // placed after the delayed ones' due time
	}
	// Claim the three heads before the delayed jobs move: a clock that
	// reads the minute for the claim, and the delayed set set aside.
	if err := e.c.Rename(t.Context(), q.delayed, "aside").Err(); err != nil {
		t.Fatal(err)
	}
	s := mustStep(t, q, stepArgs{token: token, want: 3, runMax: 1, recover: true})
	if len(s.claimed) != 3 {
		t.Fatalf("claimed %d runs, want 3", len(s.claimed))
	}
	var outs []outcome
	for _, c := range s.claimed {
		switch c.member {
		case "k:park":
			outs = append(outs, outcome{member: c.member, first: c.jobs[0].ID, end: endPark, head: c.jobs[0].ID, attempts: 3, cause: "x"})
		case "k:retry":
			outs = append(outs, outcome{member: c.member, first: c.jobs[0].ID, end: endRetry, head: c.jobs[0].ID, attempts: 1,
				due: clk.Now().Add(time.Hour)})
		}
	}
	mustStep(t, q, stepArgs{token: token, outcomes: outs})
	if err := e.c.Rename(t.Context(), "aside", q.delayed).Err(); err != nil {
		t.Fatal(err)
	}
	mustStep(t, q, stepArgs{token: token}) // moves the three delayed jobs
	for _, key := range []string{"flight", "park", "retry"} {
		got, err := e.c.LRange(t.Context(), q.group("k:"+key), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, g := range got {
			j, _, _ := decodeEntry(g)
			order = append(order, string(j.Payload))
		}
		if want := []string{key + "-0", key + "-delayed", key + "-1"}; !slices.Equal(order, want) {
			t.Errorf("key %s: %v, want %v", key, order, want)
		}
	}
}

// A stale leader's step moves no delayed job, though it is due: the
// fence refuses it first and nothing changes.
func TestStaleLeaderMovesNoDelayedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := newClock(start)
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Now: clk.Now}, HandlerFunc(noop), nil)
	old := becomeLeader(t, e.c)
	mustStep(t, q, stepArgs{token: old, recover: true})
	delay(t, q, "a", "d", start.Add(time.Second))
	takeOver(t, q.Queue)
	clk.Set(start.Add(time.Minute))
	before := snapshot(t, e.c, q.Queue)
	if _, err := q.step(t.Context(), stepArgs{token: old, want: 1, runMax: 1}); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("the old leader's step: %v, want stale", err)
	}
	if after := snapshot(t, e.c, q.Queue); !maps.Equal(before, after) {
		t.Fatal("the stale leader's step changed the queue")
	}
	if st := stats(t, q); st.Delayed != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v, want the job still delayed", st)
	}
}

// Delayed jobs are durable in Redis: a leader that stops before they are
// due leaves them; the next leader, with a worker of its own, runs them
// once due, never before (by the handler's own clock), each once, in due
// order, woken by the due time alone (its poll is an hour).
func TestDelayedJobsSurviveLeaderChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type ran struct {
		payload  string
		at, due  time.Time
		schedule string
	}
	var mu sync.Mutex
	var runs []ran
	h := HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, ran{string(j.Payload), time.Now(), j.DueAt, j.Schedule})
		return nil
	})
	slow := func(c *WorkerConfig) { c.PollInterval = time.Hour }
	first := e.queue(t, h, slow)
	now := time.Now()
	delay(t, first, "k", "2", now.Add(700*time.Millisecond))
	delay(t, first, "k", "1", now.Add(400*time.Millisecond))
	stop, _ := process(t, first, newLease(becomeLeader(t, e.c), time.Minute))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	second := e.queue(t, h, slow)
	process(t, second, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, second, 2)
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 || runs[0].payload != "1" || runs[1].payload != "2" {
		t.Fatalf("ran %+v, want 1 then 2, once each", runs)
	}
	for _, r := range runs {
		if r.at.Before(r.due) || r.due.IsZero() {
			t.Errorf("job %s ran at %s, due at %s", r.payload, r.at.Format(time.StampMilli), r.due.Format(time.StampMilli))
		}
	}
}

// A due time too far ahead is refused, and nothing is written; one in
// the past runs at once, with no due time.
func TestDelayLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(noop), nil)
	_, err := q.EnqueueItem(t.Context(), Item{Payload: []byte("x"), NotBefore: time.Now().Add(MaxDelay + time.Hour)})
	if !errors.Is(err, ErrInvalidInput) || !errors.Is(err, ErrTooFarAhead) {
		t.Fatalf("a job due in more than a year: %v, want ErrTooFarAhead", err)
	}
	if _, err := q.EnqueueItem(t.Context(), Item{Payload: []byte("x"), NotBefore: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, q); st.Delayed != 0 || st.Pending != 1 {
		t.Fatalf("stats %+v, want the past-due job pending at once and nothing else", st)
	}
	jobs, err := q.Unfinished(t.Context())
	if err != nil || len(jobs) != 1 || !jobs[0].DueAt.IsZero() {
		t.Fatalf("unfinished %+v, %v", jobs, err)
	}
}
