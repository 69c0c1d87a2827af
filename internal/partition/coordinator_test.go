package partition

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// syncLane is a fakeLane safe for the coordinator's goroutine and the test.
type syncLane struct {
	mu sync.Mutex
	fakeLane
}

func (l *syncLane) Phase() Phase { l.mu.Lock(); defer l.mu.Unlock(); return l.fakeLane.Phase() }
func (l *syncLane) Token() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.fakeLane.Token() }
func (l *syncLane) Avoiding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fakeLane.Avoiding()
}
func (l *syncLane) Contend() { l.mu.Lock(); defer l.mu.Unlock(); l.fakeLane.Contend() }
func (l *syncLane) Leave()   { l.mu.Lock(); defer l.mu.Unlock(); l.fakeLane.Leave() }

func TestCoordinatorReadsAndPlans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lanes := []*syncLane{{}, {}, {}, {}}
		var reads atomic.Int32
		var members atomic.Value
		members.Store([]Member{{ID: "b", Owned: map[int]int64{0: 1, 1: 1, 2: 1, 3: 1}}})
		ls := make([]Lane, len(lanes))
		for i := range lanes {
			ls[i] = lanes[i]
		}
		c, err := NewCoordinator(CoordinatorConfig{
			Self: "self", Lanes: ls, ReadInterval: time.Second, FreeGrace: 5 * time.Second,
			Members: func(context.Context) ([]Member, error) {
				reads.Add(1)
				return members.Load().([]Member), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(ctx) }()

		synctest.Wait()
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads at start, want 1", n)
		}
		contending := func() int {
			n := 0
			for _, l := range lanes {
				if l.Phase() == Contending {
					n++
				}
			}
			return n
		}
		if n := contending(); n != 2 {
			t.Fatalf("a joiner contends for %d, want its quota 2", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := reads.Load(); n != 2 {
			t.Fatalf("%d reads after one interval, want 2", n)
		}
		// B leaves: the first notice after a quiet spell is read at once,
		// with no time passing.
		time.Sleep(readDebounce)
		members.Store([]Member(nil))
		c.MembersChanged()
		synctest.Wait()
		if n := reads.Load(); n != 3 {
			t.Fatalf("%d reads after a notice, want 3", n)
		}
		if n := contending(); n != 4 {
			t.Fatalf("alone, it contends for %d, want 4", n)
		}
		// The burst that follows (B's release notices) is one read, a
		// debounce after the last.
		c.MembersChanged()
		synctest.Wait()
		c.MembersChanged()
		synctest.Wait()
		if n := reads.Load(); n != 3 {
			t.Fatalf("%d reads within the debounce, want still 3", n)
		}
		time.Sleep(readDebounce)
		synctest.Wait()
		if n := reads.Load(); n != 4 {
			t.Fatalf("%d reads after a burst of two notices, want 4", n)
		}
		time.Sleep(readDebounce)
		synctest.Wait()
		if n := reads.Load(); n != 4 {
			t.Fatalf("%d reads once the burst is read, want still 4", n)
		}
		if st := c.Status(); st.Quota["self"] != 4 || len(st.Owner) != 4 {
			t.Fatalf("status %+v", st)
		}
		cancel()
		<-done
	})
}

func TestCoordinatorConfig(t *testing.T) {
	if _, err := NewCoordinator(CoordinatorConfig{}); err == nil {
		t.Fatal("an empty config was accepted")
	}
	one := CoordinatorConfig{Self: "self", Lanes: []Lane{&fakeLane{}}, ReadInterval: time.Second, FreeGrace: time.Second,
		Members: func(context.Context) ([]Member, error) { return nil, nil }}
	if _, err := NewCoordinator(one); err != nil {
		t.Fatalf("one lane (one partition) refused: %v", err)
	}
}
