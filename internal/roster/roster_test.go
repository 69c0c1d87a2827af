package roster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var keys = keyspace.MustNew("test:leader")

func newRoster(t *testing.T, c *redis.Client, ttl time.Duration) *Roster {
	t.Helper()
	r, err := New(Config{Client: c, Keys: keys, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{})
	for _, want := range []string{"Client is required", "Keys is required", "TTL must be at least 1ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(Config{}) = %v, want it to say %q", err, want)
		}
	}
}

// TestPutListExpire: records are listed in worker order; one that is not
// refreshed drops out after its TTL; Remove takes one out at once; the
// leader's prune drops index entries of long-expired records.
func TestPutListExpire(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	long, short := newRoster(t, c, time.Minute), newRoster(t, c, 300*time.Millisecond)
	ctx := t.Context()
	for _, rec := range []Record{{WorkerID: "w-2", State: "working", Leader: true, Token: 7}, {WorkerID: "w-1", State: "waiting_to_acquire_lock"}} {
		if err := long.Put(ctx, rec, false, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := short.Put(ctx, Record{WorkerID: "w-3", Host: "h", PID: 42}, false, false); err != nil {
		t.Fatal(err)
	}
	got, err := long.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].WorkerID != "w-1" || got[1].Token != 7 || got[2].PID != 42 || got[2].UpdatedAt.IsZero() {
		t.Fatalf("List = %+v", got)
	}
	poll.Until(t, 5*time.Second, "w-3's record expiring", func() bool {
		got, err := long.List(ctx)
		return err == nil && len(got) == 2
	})
	if err := long.Remove(ctx, "w-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := long.List(ctx); len(got) != 1 || got[0].WorkerID != "w-2" {
		t.Fatalf("after Remove: %+v", got)
	}
	// w-3 expired in the index too, long enough ago for the prune.
	poll.Until(t, 5*time.Second, "the index entry of w-3 old enough to prune", func() bool {
		score, err := c.ZScore(ctx, keys.Replicas(), "w-3").Result()
		return err == nil && time.UnixMilli(int64(score)).Add(300*time.Millisecond).Before(time.Now())
	})
	if err := short.Put(ctx, Record{WorkerID: "w-2", Leader: true}, true, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.ZCard(ctx, keys.Replicas()).Result(); n != 1 {
		t.Errorf("index holds %d members after the prune, want 1", n)
	}
}

// TestRemoveAnnounces: Remove and an announced Put publish on the fleet
// channel; a plain refresh does not.
func TestRemoveAnnounces(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	r := newRoster(t, c, time.Minute)
	ps := c.Subscribe(t.Context(), keys.FleetChannel())
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil { // the subscription
		t.Fatal(err)
	}
	for _, announce := range []bool{false, true} {
		if err := r.Put(t.Context(), Record{WorkerID: "w-1"}, false, announce); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Remove(t.Context(), "w-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(t.Context(), keys.FleetChannel(), "end").Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != "end" {
		m, err := ps.ReceiveMessage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Payload)
	}
	if strings.Join(got, ",") != "w-1,w-1,end" {
		t.Errorf("fleet channel got %v, want the announced Put, the Remove, end", got)
	}
}

// TestReporter: the record is written at once, a change is written after
// the settle and announced, a burst that ends where it began is not, and
// the record is removed when Run ends.
func TestReporter(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	r := newRoster(t, c, 3*time.Second)
	var mu sync.Mutex
	cur := Record{WorkerID: "w-1", State: "waiting_to_acquire_lock"}
	set := func(f func(*Record)) { mu.Lock(); f(&cur); mu.Unlock() }
	var reads atomic.Int64
	p, err := NewReporter(ReporterConfig{Roster: r, Interval: time.Second, Read: func() Record {
		reads.Add(1)
		mu.Lock()
		defer mu.Unlock()
		return cur
	}})
	if err != nil {
		t.Fatal(err)
	}
	var announced atomic.Int64
	ps := c.Subscribe(t.Context(), keys.FleetChannel())
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ps.Channel() {
			announced.Add(1)
		}
	})
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()

	state := func() string {
		got, err := r.List(t.Context())
		if err != nil || len(got) != 1 {
			return ""
		}
		return got[0].State
	}
	poll.Until(t, 5*time.Second, "the first record", func() bool { return state() == "waiting_to_acquire_lock" })
	poll.Until(t, 5*time.Second, "the first announcement", func() bool { return announced.Load() == 1 })

	// A burst that ends where it began: read, but not written.
	set(func(r *Record) { r.State = "acquiring_lock" })
	p.Poke()
	set(func(r *Record) { r.State = "waiting_to_acquire_lock" })
	before := reads.Load()
	poll.Until(t, 5*time.Second, "the poke read", func() bool { return reads.Load() > before })

	set(func(r *Record) { r.State, r.Leader, r.Token = "working", true, 3 })
	p.Poke()
	poll.Until(t, 5*time.Second, "the change written", func() bool { return state() == "working" })
	poll.Until(t, 5*time.Second, "the change announced", func() bool { return announced.Load() == 2 })

	stop()
	<-done
	if got, _ := r.List(t.Context()); len(got) != 0 {
		t.Errorf("record left after Run ended: %+v", got)
	}
	poll.Until(t, 5*time.Second, "the removal announced", func() bool { return announced.Load() == 3 })
	_ = ps.Close()
	wg.Wait()
}

// TestReporterRefreshAndLeave: the tick writes the record, changed or
// not; a record carries the partitions a replica leads and waits for; Leave
// removes it and announces it, and Run writes it no more, whatever it is
// poked with.
func TestReporterRefreshAndLeave(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	r := newRoster(t, c, 2*time.Second)
	cur := Record{WorkerID: "w-1", State: "working", Leader: true,
		Partitions: []Owned{{Partition: 2, Token: 5}, {Partition: 7, Token: 9}}, Contending: []int{3}}
	p, err := NewReporter(ReporterConfig{Roster: r, Interval: time.Second, Read: func() Record { return cur }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { stop(); <-done }()

	updated := func() time.Time {
		got, err := r.List(t.Context())
		if err != nil || len(got) != 1 {
			return time.Time{}
		}
		if !slices.Equal(got[0].Partitions, cur.Partitions) || !slices.Equal(got[0].Contending, cur.Contending) {
			t.Fatalf("record %+v lost its partitions", got[0])
		}
		return got[0].UpdatedAt
	}
	poll.Until(t, 5*time.Second, "the first record", func() bool { return !updated().IsZero() })
	first := updated()
	poll.Until(t, 5*time.Second, "a refresh on the tick", func() bool { return updated().After(first) })

	ps := c.Subscribe(t.Context(), keys.FleetChannel())
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.Leave(t.Context())
	if got, _ := r.List(t.Context()); len(got) != 0 {
		t.Fatalf("record left after Leave: %+v", got)
	}
	if m, err := ps.ReceiveMessage(t.Context()); err != nil || m.Payload != "w-1" {
		t.Fatalf("removal announced as %v, %v", m, err)
	}
}

// fakeStore records a Reporter's writes, for tests under synctest.
type fakeStore struct {
	mu      sync.Mutex
	puts    int
	removed bool
}

func (f *fakeStore) Put(context.Context, Record, bool, bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	return nil
}

func (f *fakeStore) Remove(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = true
	return nil
}

func (f *fakeStore) TTL() time.Duration { return 2 * time.Second }

func (f *fakeStore) state() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts, f.removed
}

// TestReporterSilentAfterLeave: once Leave returns, Run writes nothing
// more, neither on a poke nor on its ticks (run in a synctest bubble: ten
// refresh periods pass on the fake clock, and synctest.Wait says every
// goroutine is blocked, so "nothing happened" is not a guess).
func TestReporterSilentAfterLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStore{}
		p, err := NewReporter(ReporterConfig{Roster: f, Interval: time.Second, Read: func() Record { return Record{WorkerID: "w-1"} }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		time.Sleep(3 * time.Second) // three ticks
		synctest.Wait()
		if puts, _ := f.state(); puts < 3 {
			t.Fatalf("%d writes over three refresh periods", puts)
		}
		p.Leave(t.Context())
		before, removed := f.state()
		if !removed {
			t.Fatal("Leave did not remove the record")
		}
		p.Poke()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if puts, _ := f.state(); puts != before {
			t.Fatalf("%d writes after Leave", puts-before)
		}
		stop()
		<-done
	})
}

// TestClaim: a name no live record holds is claimed (listed like a Put
// record); a live one is not, and the claimant learns who holds it; once
// that record is gone, the name is free again.
func TestClaim(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	r := newRoster(t, s.Client(), time.Minute)
	ctx := t.Context()
	if _, ok, err := r.Claim(ctx, Record{WorkerID: "w-1", Host: "h1", PID: 11}); err != nil || !ok {
		t.Fatalf("first claim of w-1: claimed %v, %v", ok, err)
	}
	if got, err := r.List(ctx); err != nil || len(got) != 1 || got[0].Host != "h1" {
		t.Fatalf("after the claim, List = %+v, %v", got, err)
	}
	other, ok, err := r.Claim(ctx, Record{WorkerID: "w-1", Host: "h2", PID: 22})
	if err != nil || ok || other.Host != "h1" || other.PID != 11 {
		t.Fatalf("second claim of w-1: claimed %v, other %+v, %v; want refused, naming h1 pid 11", ok, other, err)
	}
	if got, _ := r.List(ctx); len(got) != 1 || got[0].Host != "h1" {
		t.Fatalf("a refused claim changed the record: %+v", got)
	}
	if err := r.Remove(ctx, "w-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Claim(ctx, Record{WorkerID: "w-1", Host: "h2", PID: 22}); err != nil || !ok {
		t.Fatalf("claim after the record was removed: claimed %v, %v", ok, err)
	}
}
