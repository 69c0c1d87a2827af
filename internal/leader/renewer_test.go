package leader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// fakeGroup records each call's partitions and answers err for those in
// lost.
type fakeGroup struct {
	mu    sync.Mutex
	calls [][]int
	lost  map[int]bool
}

func (g *fakeGroup) Renew(_ context.Context, leases []*redislock.Lease) []error {
	g.mu.Lock()
	defer g.mu.Unlock()
	errs := make([]error, len(leases))
	var call []int
	for p, l := range leases {
		if l == nil {
			continue
		}
		call = append(call, p)
		if g.lost[p] {
			errs[p] = redislock.ErrLost
		}
	}
	g.calls = append(g.calls, call)
	return errs
}

func (g *fakeGroup) got() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

func newRenewer(t *testing.T, g Group, partitions int) *Renewer {
	t.Helper()
	r, err := NewRenewer(RenewerConfig{Group: g, Partitions: partitions, Interval: renewInterval})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// Requests that arrive together go in one Group call, and each gets the
// answer for its own lease from that call; a request that comes later
// gets a call of its own.
func TestRenewerCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &fakeGroup{lost: map[int]bool{2: true}}
		r := newRenewer(t, g, 4)
		lease := redislock.NewLease("w", 1, time.Now().Add(time.Hour))
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for p := range 3 {
			wg.Go(func() {
				time.Sleep(time.Duration(p) * time.Millisecond) // a few hops apart, as the lanes' timers are
				errs[p] = r.Renew(t.Context(), p, lease)
			})
		}
		wg.Wait()
		if calls := g.got(); len(calls) != 1 || !slices.Equal(calls[0], []int{0, 1, 2}) {
			t.Fatalf("calls %v, want one for partitions 0, 1, 2", calls)
		}
		if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], redislock.ErrLost) {
			t.Fatalf("answers %v: want each its own", errs)
		}
		time.Sleep(time.Second)
		if err := r.Renew(t.Context(), 3, lease); err != nil {
			t.Fatal(err)
		}
		if calls := g.got(); len(calls) != 2 || !slices.Equal(calls[1], []int{3}) {
			t.Fatalf("calls %v, want a second one for partition 3", calls)
		}
		if err := r.Renew(t.Context(), 4, lease); err == nil {
			t.Fatal("a partition out of range was renewed")
		}
	})
}

// The ticks are multiples of the interval on the Renewer's clock: never
// more than an interval away, and the same instant for every lane.
func TestRenewerTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRenewer(t, &fakeGroup{}, 1)
		if d := r.Next(); d != renewInterval {
			t.Fatalf("Next at the origin: %s, want %s", d, renewInterval)
		}
		time.Sleep(2*renewInterval + time.Second)
		if d := r.Next(); d != renewInterval-time.Second {
			t.Fatalf("Next 1s past a tick: %s, want %s", d, renewInterval-time.Second)
		}
	})
}

// Lanes that lead renew together: one Group call per tick for all of
// them, whenever each began to lead; a lane whose lease the call says is
// lost pauses its work.
func TestLanesRenewTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &fakeGroup{lost: map[int]bool{}}
		ren := newRenewer(t, g, 3)
		var rigs []*laneRig
		for p := range 3 {
			time.Sleep(time.Second) // each begins to lead at another moment
			r := newLaneRig(t, func(_ *laneRig, c *Config) { c.Partition, c.Renewer = p, ren })
			r.start()
			r.wantState(machine.Working)
			rigs = append(rigs, r)
		}
		time.Sleep(renewInterval)
		for _, c := range g.got() {
			if !slices.Equal(c, []int{0, 1, 2}) {
				t.Fatalf("calls %v: want every one for the three lanes together", g.got())
			}
		}
		if n := len(g.got()); n != 1 {
			t.Fatalf("%d calls in one interval, want 1", n)
		}
		g.mu.Lock()
		g.lost[1] = true
		g.mu.Unlock()
		time.Sleep(renewInterval)
		rigs[0].wantState(machine.Working)
		rigs[1].wantState(machine.WaitingToAcquireLock)
		if s := rigs[1].snap(); s.Reason.Kind != LeaseLost {
			t.Fatalf("reason %v", s.Reason.Kind)
		}
	})
}
