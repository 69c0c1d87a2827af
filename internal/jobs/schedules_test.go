package jobs

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/schedule"
)

// tenThirty is when the schedules of these tests are added: every minute,
// their first tick is 10:01.
var tenThirty = time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)

// minutely is a schedule every minute, its ticks jobs of key key.
func minutely(name, key string, c schedule.CatchUp) Schedule {
	return Schedule{Name: name, When: schedule.When{Every: time.Minute}, Key: key, Payload: []byte("tick of " + name), CatchUp: c}
}

// scheduledQueue is a queue on a fake clock at 10:00:30 with schedule s.
func scheduledQueue(t *testing.T, e *env, s ...Schedule) (*testQueue, *fakeClock) {
	t.Helper()
	clk := newClock(tenThirty)
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, Now: clk.Now}, HandlerFunc(noop), nil)
	for _, sc := range s {
		if err := q.AddSchedule(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
	}
	return q, clk
}

// dueTicks is a step of token that reads the schedules due, and the
// ticks its leader would send for them.
func dueTicks(t *testing.T, q *testQueue, token int64, clk *fakeClock) []ticks {
	t.Helper()
	s := mustStep(t, q, stepArgs{token: token, recover: true})
	var out []ticks
	for _, d := range s.due {
		tk, err := q.tick(d, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

// tickJobs is every job of key's group: its schedule and tick time.
func tickJobs(t *testing.T, e *env, q *testQueue, key string) []Job {
	t.Helper()
	raw, err := e.c.LRange(t.Context(), q.group(q.member(key, "")), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []Job
	for _, r := range raw {
		j, _, err := decodeEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// A tick is enqueued exactly once: not before it is due; once when due;
// not again when the step that carried it is sent again (its reply lost),
// nor when a step carries a tick the schedule already had (the last-tick
// check), nor by a stale leader racing the new one, nor lost when the
// leader that read it died before sending it.
func TestScheduleTicksOnce(t *testing.T) {
	t.Parallel()
	t.Run("resent step", func(t *testing.T) {
		e := newEnv(t)
		q, clk := scheduledQueue(t, e, minutely("s", "k", schedule.CatchUpOnce))
		token := becomeLeader(t, e.c)
		clk.Set(tenThirty.Add(29*time.Second + 999*time.Millisecond))
		if tk := dueTicks(t, q, token, clk); len(tk) != 0 {
			t.Fatalf("due a millisecond before the tick: %+v", tk)
		}
		clk.Set(tenThirty.Add(30*time.Second + 200*time.Millisecond))
		tk := dueTicks(t, q, token, clk)
		if len(tk) != 1 || len(tk[0].jobs) != 1 {
			t.Fatalf("ticks %+v, want one", tk)
		}
		a := stepArgs{token: token, ticks: tk}
		if s := mustStep(t, q, a); !slices.Equal(s.ticked, []bool{true}) {
			t.Fatalf("ticked %v", s.ticked)
		}
		if s := mustStep(t, q, a); !slices.Equal(s.ticked, []bool{false}) {
			t.Fatalf("the resent step ticked %v, want nothing applied", s.ticked)
		}
		// A step that finds the next tick it read but carries a tick the
		// schedule had: the last-tick check holds it.
		e.c.ZAdd(t.Context(), q.schedNext, redis.Z{Score: float64(tk[0].seen.UnixMilli()), Member: "s"})
		if s := mustStep(t, q, a); !slices.Equal(s.ticked, []bool{true}) {
			t.Fatalf("ticked %v", s.ticked)
		}
		jobs := tickJobs(t, e, q, "k")
		if len(jobs) != 1 || jobs[0].Schedule != "s" || !jobs[0].DueAt.Equal(tenThirty.Add(30*time.Second)) || string(jobs[0].Payload) != "tick of s" {
			t.Fatalf("key k holds %+v, want the 10:01 tick once", jobs)
		}
		if st := stats(t, q); st.Pending != 1 {
			t.Fatalf("pending %d, want 1", st.Pending)
		}
		list, err := q.Schedules(t.Context())
		if err != nil || len(list) != 1 || !list[0].LastTick.Equal(jobs[0].DueAt) || !list[0].NextTick.Equal(tenThirty.Add(90*time.Second)) ||
			list[0].PeriodMs != time.Minute.Milliseconds() {
			t.Fatalf("schedules %+v, %v", list, err)
		}
	})
	t.Run("racing leaders", func(t *testing.T) {
		e := newEnv(t)
		q, clk := scheduledQueue(t, e, minutely("s", "k", schedule.CatchUpOnce))
		clk.Set(tenThirty.Add(31 * time.Second))
		old := becomeLeader(t, e.c)
		oldTicks := dueTicks(t, q, old, clk)
		young := becomeLeader(t, e.c)
		youngTicks := dueTicks(t, q, young, clk) // the same tick, read before either sent it
		if len(oldTicks) != 1 || len(youngTicks) != 1 {
			t.Fatalf("ticks %+v and %+v", oldTicks, youngTicks)
		}
		if s := mustStep(t, q, stepArgs{token: young, ticks: youngTicks}); !s.ticked[0] {
			t.Fatal("the newer leader's tick was not applied")
		}
		if _, err := q.step(t.Context(), stepArgs{token: old, ticks: oldTicks}); !errors.Is(err, ErrStaleToken) {
			t.Fatalf("the older leader's tick: %v, want stale", err)
		}
		if jobs := tickJobs(t, e, q, "k"); len(jobs) != 1 {
			t.Fatalf("key k holds %d ticks, want 1", len(jobs))
		}
	})
	t.Run("leader change mid-tick", func(t *testing.T) {
		e := newEnv(t)
		q, clk := scheduledQueue(t, e, minutely("s", "k", schedule.CatchUpOnce))
		clk.Set(tenThirty.Add(31 * time.Second))
		lost := becomeLeader(t, e.c)
		if tk := dueTicks(t, q, lost, clk); len(tk) != 1 {
			t.Fatalf("ticks %+v", tk)
		} // ... and it dies before sending them.
		next := becomeLeader(t, e.c)
		tk := dueTicks(t, q, next, clk)
		if len(tk) != 1 {
			t.Fatalf("the next leader found %d schedules due, want the one the lost leader read", len(tk))
		}
		mustStep(t, q, stepArgs{token: next, ticks: tk})
		if jobs := tickJobs(t, e, q, "k"); len(jobs) != 1 || !jobs[0].DueAt.Equal(tenThirty.Add(30*time.Second)) {
			t.Fatalf("key k holds %+v, want the 10:01 tick once", jobs)
		}
	})
	t.Run("removed mid-tick", func(t *testing.T) {
		e := newEnv(t)
		q, clk := scheduledQueue(t, e, minutely("s", "k", schedule.CatchUpOnce))
		clk.Set(tenThirty.Add(31 * time.Second))
		token := becomeLeader(t, e.c)
		tk := dueTicks(t, q, token, clk)
		if err := q.RemoveSchedule(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		if s := mustStep(t, q, stepArgs{token: token, ticks: tk}); s.ticked[0] {
			t.Fatal("a tick of a removed schedule was applied")
		}
		if jobs := tickJobs(t, e, q, "k"); len(jobs) != 0 {
			t.Fatalf("a removed schedule ticked: %+v", jobs)
		}
		if n, _ := e.c.Exists(t.Context(), q.schedules, q.schedNext, q.schedLast).Result(); n != 0 {
			t.Fatalf("%d of the schedule's keys left", n)
		}
	})
}

// Ticks missed while no leader ran the schedule: with catch-up once, the
// latest missed tick runs once, with its own time, before the current
// one; with skip, only the current one runs. Either way the schedule
// goes on from the next tick.
func TestScheduleCatchUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q, clk := scheduledQueue(t, e, minutely("once", "once", schedule.CatchUpOnce), minutely("skip", "skip", schedule.CatchUpSkip))
	clk.Set(time.Date(2026, 3, 1, 10, 5, 10, 0, time.UTC)) // 10:01 to 10:04 missed
	token := becomeLeader(t, e.c)
	mustStep(t, q, stepArgs{token: token, ticks: dueTicks(t, q, token, clk)})
	at := func(m int) time.Time { return time.Date(2026, 3, 1, 10, m, 0, 0, time.UTC) }
	for key, want := range map[string][]time.Time{"once": {at(4), at(5)}, "skip": {at(5)}} {
		var got []time.Time
		for _, j := range tickJobs(t, e, q, key) {
			got = append(got, j.DueAt.UTC())
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s: ticks %v, want %v", key, got, want)
		}
	}
	list, err := q.Schedules(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatal(list, err)
	}
	for _, s := range list {
		if !s.LastTick.Equal(at(5)) || !s.NextTick.Equal(at(6)) {
			t.Errorf("%s: last %s next %s, want 10:05 and 10:06", s.Name, s.LastTick, s.NextTick)
		}
	}
}

// A leader runs a schedule's ticks on time without polling (its poll is
// an hour): each tick once, never before its time, its job carrying the
// schedule's name and the tick's time.
func TestScheduleRunsOnTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var ran []Job
	var late []string
	h := HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, j)
		if now.Before(j.DueAt) {
			late = append(late, j.DueAt.String()+" ran at "+now.String())
		}
		return nil
	})
	q := e.queue(t, h, func(c *WorkerConfig) { c.PollInterval = time.Hour })
	if err := q.AddSchedule(t.Context(), Schedule{Name: "beat", When: schedule.When{Every: time.Second}, Payload: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 3)
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Fatalf("ticks run before their time: %v", late)
	}
	for i, j := range ran[:3] {
		if j.Schedule != "beat" || j.DueAt.UnixMilli()%1000 != 0 || i > 0 && !j.DueAt.Equal(ran[i-1].DueAt.Add(time.Second)) {
			t.Fatalf("ran %+v: want ticks one second apart, once each", ran)
		}
	}
}

// Adding checks the schedule and refuses a name in use, in any partition;
// a schedule lives in its key's partition, or its name's; removing finds
// it wherever it is.
func TestScheduleAddAndRemove(t *testing.T) {
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
	ctx := t.Context()
	for _, bad := range []Schedule{
		{Name: "a b", When: schedule.When{Every: time.Minute}, Payload: []byte("x")},
		{Name: "x", When: schedule.When{Every: time.Millisecond}, Payload: []byte("x")},
		{Name: "x", When: schedule.When{Cron: "bad"}, Payload: []byte("x")},
		{Name: "x", When: schedule.When{Every: time.Minute}},
		{Name: "x", When: schedule.When{Every: time.Minute}, Payload: []byte("x"), Key: "\t"},
	} {
		if err := r.AddSchedule(ctx, bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("AddSchedule(%+v) = %v, want ErrInvalidInput", bad, err)
		}
	}
	keyed := Schedule{Name: "report", When: schedule.When{Cron: "0 2 * * *", TZ: "Europe/Paris"}, Key: "acct-7", Payload: []byte("r")}
	if err := r.AddSchedule(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	again := keyed
	again.Key = "other" // another partition, the same name
	if err := r.AddSchedule(ctx, again); !errors.Is(err, ErrScheduleExists) {
		t.Fatalf("a second schedule named report: %v, want ErrScheduleExists", err)
	}
	list, err := r.Schedules(ctx)
	if err != nil || len(list) != 1 || list[0].Partition != r.Partition("acct-7", "") || list[0].Cron != "0 2 * * *" ||
		list[0].TZ != "Europe/Paris" || list[0].Key != "acct-7" || list[0].CatchUp != "once" || list[0].NextTick.IsZero() {
		t.Fatalf("schedules %+v, %v", list, err)
	}
	if err := r.RemoveSchedule(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveSchedule(ctx, "report"); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("removing it twice: %v, want ErrNoSchedule", err)
	}
}

// A cron schedule's period is the gap that follows its last tick: a
// weekday schedule that ticked on Friday has 72 h before Monday's tick,
// not the 24 h of the week's other gaps, so a Sunday without ticks is no
// late schedule (the LockworkerScheduleLate alert: last tick older than
// twice the period). Before the first tick, the gap after the next.
func TestSchedulePeriodFollowsLastTick(t *testing.T) {
	e := newEnv(t)
	q, _ := scheduledQueue(t, e)
	weekdays := Schedule{Name: "w", When: schedule.When{Cron: "0 9 * * 1-5"}, Payload: []byte("p")}
	friday := time.Date(2026, 3, 6, 9, 0, 0, 0, time.UTC) // a Friday
	monday := friday.Add(72 * time.Hour)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	for _, tc := range []struct {
		name       string
		last, next time.Time
		want       time.Duration
	}{
		{"after Friday's tick", friday, monday, 72 * time.Hour},
		{"after Thursday's tick", friday.Add(-24 * time.Hour), friday, 24 * time.Hour},
		{"before the first tick, Friday next", time.Time{}, friday, 72 * time.Hour},
	} {
		last := ""
		if !tc.last.IsZero() {
			last = ms(tc.last)
		}
		f := q.figures(weekdays, last, tc.next.UnixMilli())
		if got := time.Duration(f.PeriodMs) * time.Millisecond; got != tc.want {
			t.Errorf("%s: period %v, want %v", tc.name, got, tc.want)
		}
	}
	if f := q.figures(minutely("m", "", schedule.CatchUpOnce), ms(friday), friday.Add(time.Minute).UnixMilli()); f.PeriodMs != time.Minute.Milliseconds() {
		t.Errorf("every minute: period %dms", f.PeriodMs)
	}
}
