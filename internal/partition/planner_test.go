package partition

import (
	"testing"
	"time"
)

// fakeLane moves at once: Contend makes an idle lane contend, Leave makes
// an owning lane leave and a contending one idle.
type fakeLane struct {
	phase  Phase
	token  int64
	leaves int
	avoid  bool
}

func (l *fakeLane) Phase() Phase   { return l.phase }
func (l *fakeLane) Avoiding() bool { return l.avoid }
func (l *fakeLane) Token() int64   { return l.token }
func (l *fakeLane) Contend() {
	if l.phase == Idle {
		l.phase = Contending
	}
}
func (l *fakeLane) Leave() {
	switch l.phase {
	case Owning:
		l.phase, l.token = Leaving, 0
		l.leaves++
	case Contending:
		l.phase = Idle
	}
}

type rig struct {
	now   time.Time
	lanes []*fakeLane
	p     *planner
}

func newRig(t *testing.T, n int) *rig {
	t.Helper()
	r := &rig{now: time.Unix(1_000_000, 0)}
	lanes := make([]Lane, n)
	for i := range lanes {
		r.lanes = append(r.lanes, &fakeLane{})
		lanes[i] = r.lanes[i]
	}
	cfg := CoordinatorConfig{Self: "self", Lanes: lanes, Members: nil, ReadInterval: time.Second,
		Settle: 2 * time.Second, MaxMoves: 2, FreeGrace: 10 * time.Second, Now: func() time.Time { return r.now }}
	r.p = newPlanner(cfg)
	return r
}

func (r *rig) phases(ph Phase) []int {
	var out []int
	for i, l := range r.lanes {
		if l.phase == ph {
			out = append(out, i)
		}
	}
	return out
}

// own makes every contending lane own its partition.
func (r *rig) own() {
	for _, l := range r.lanes {
		if l.phase == Contending {
			l.phase, l.token = Owning, 1
		}
	}
}

func TestPlannerAloneContendsForAll(t *testing.T) {
	r := newRig(t, 8)
	r.p.members(nil)
	r.p.plan()
	if got := len(r.phases(Contending)); got != 8 {
		t.Fatalf("%d lanes contend, want 8", got)
	}
}

// A member that joins gets its share only once it has settled and waits
// for each partition, at most MaxMoves handovers at a time.
func TestPlannerHandsOverToASettledContender(t *testing.T) {
	r := newRig(t, 8)
	r.p.members(nil)
	r.p.plan()
	r.own()

	// B appears, owning nothing, contending for every partition.
	b := Member{ID: "b", Contending: []int{0, 1, 2, 3, 4, 5, 6, 7}}
	r.p.members([]Member{b})
	r.p.plan()
	if n := len(r.phases(Leaving)); n != 0 {
		t.Fatalf("%d handovers to a member not yet settled", n)
	}

	r.now = r.now.Add(2 * time.Second)
	r.p.members([]Member{b})
	st := r.p.plan()
	if st.Quota["self"] != 4 || st.Quota["b"] != 4 {
		t.Fatalf("quotas %v, want 4 each", st.Quota)
	}
	leaving := r.phases(Leaving)
	if len(leaving) != 2 {
		t.Fatalf("%d handovers in flight, want MaxMoves 2", len(leaving))
	}
	r.p.plan()
	if n := len(r.phases(Leaving)); n != 2 {
		t.Fatalf("%d handovers in flight after a second plan, want still 2", n)
	}
	// The two finish; B now owns them.
	owned := map[int]int64{}
	for _, i := range leaving {
		r.lanes[i].phase = Idle
		owned[i] = 2
	}
	b.Owned = owned
	r.p.members([]Member{b})
	r.p.plan()
	if n := len(r.phases(Leaving)); n != 2 {
		t.Fatalf("%d handovers after the first two ended, want 2 more", n)
	}
	for _, i := range r.phases(Leaving) {
		r.lanes[i].phase = Idle
		owned[i] = 2
	}
	r.p.members([]Member{b})
	r.p.plan()
	if n, o := len(r.phases(Leaving)), len(r.phases(Owning)); n != 0 || o != 4 {
		t.Fatalf("after the handovers: %d leaving, %d owned; want 0 and 4", n, o)
	}
	if n := len(r.phases(Contending)); n != 0 {
		t.Fatalf("%d lanes contend for B's partitions", n)
	}
}

// An owner keeps a partition that Assign gives to a member that does not
// wait for it: handing it over would leave it without an owner.
func TestPlannerKeepsWhatNobodyWaitsFor(t *testing.T) {
	r := newRig(t, 8)
	r.p.members(nil)
	r.p.plan()
	r.own()
	r.now = r.now.Add(time.Hour)
	r.p.members([]Member{{ID: "b"}})
	r.now = r.now.Add(time.Hour)
	r.p.members([]Member{{ID: "b"}})
	r.p.plan()
	if n := len(r.phases(Owning)); n != 8 {
		t.Fatalf("%d of 8 kept; B waits for none", n)
	}
}

// A joiner waits for its share; a partition whose owner left goes to the
// member Assign names at once, and to every member after FreeGrace.
func TestPlannerOrphans(t *testing.T) {
	r := newRig(t, 6)
	b := Member{ID: "b", Owned: map[int]int64{0: 1, 1: 1}}
	c := Member{ID: "c", Owned: map[int]int64{2: 1, 3: 1, 4: 1, 5: 1}}
	r.p.members([]Member{b, c})
	st := r.p.plan()
	if n := len(r.phases(Contending)); n != st.Quota["self"] || n != 2 {
		t.Fatalf("a joiner contends for %d, want its quota 2 (%v)", n, st.Quota)
	}
	// C is gone: B keeps its two and takes one more, self takes three.
	r.p.members([]Member{b})
	st = r.p.plan()
	if n := len(r.phases(Contending)); n != 3 || st.Quota["b"] != 3 {
		t.Fatalf("self contends for %d of C's four, want 3 (%v)", n, st.Quota)
	}
	// B does not take its one: after FreeGrace self contends for all four.
	r.now = r.now.Add(10 * time.Second)
	r.p.members([]Member{b})
	r.p.plan()
	if got := r.phases(Contending); len(got) != 4 {
		t.Fatalf("lanes %v contend after the grace, want C's four", got)
	}
}

// A contending lane whose partition is another's stops contending.
func TestPlannerStopsContendingForOthers(t *testing.T) {
	r := newRig(t, 2)
	r.p.members(nil)
	r.p.plan()
	if n := len(r.phases(Contending)); n != 2 {
		t.Fatalf("%d contend alone, want 2", n)
	}
	r.p.members([]Member{{ID: "b", Owned: map[int]int64{0: 1, 1: 1}}})
	r.p.plan()
	if n := len(r.phases(Contending)); n != 1 {
		t.Fatalf("%d lanes contend with B owning both, want 1 (self's quota)", n)
	}
}

// A partition this replica stepped down from goes to another member that
// has room; this replica stops contending for it.
func TestPlannerAvoids(t *testing.T) {
	r := newRig(t, 4)
	b := Member{ID: "b", Owned: map[int]int64{}}
	r.p.members([]Member{b})
	r.now = r.now.Add(2 * time.Second) // b has settled
	r.p.members([]Member{b})
	st := r.p.plan()
	mine := r.phases(Contending)
	if len(mine) != 2 || st.Quota["self"] != 2 {
		t.Fatalf("self contends for %v (%v)", mine, st.Quota)
	}
	r.own()
	step := mine[0]
	r.lanes[step].avoid = true
	r.lanes[step].phase = Contending // its work ended on the step-down: it rejoined the followers
	st = r.p.plan()
	if st.Owner[step] != "b" {
		t.Fatalf("partition %d goes to %q after self stepped down, want b", step, st.Owner[step])
	}
	if r.lanes[step].phase != Idle {
		t.Fatalf("self still contends for partition %d it avoids", step)
	}
	r.now = r.now.Add(time.Hour) // long after the grace: still avoided
	r.p.plan()
	if r.lanes[step].phase != Idle {
		t.Fatalf("self contends for the avoided partition %d as an orphan", step)
	}
}

// A replica given no partition, because the fleet has more settled
// members than partitions, stands by for every partition: it contends for
// all of them and keeps contending, without taking any from their owners.
func TestPlannerSpareStandsByEverywhere(t *testing.T) {
	r := newRig(t, 2)
	b := Member{ID: "b", Owned: map[int]int64{0: 1}}
	c := Member{ID: "c", Owned: map[int]int64{1: 1}}
	r.p.members([]Member{b, c})
	st := r.p.plan()
	if st.Quota["self"] != 0 {
		t.Fatalf("quotas %v, want none for self", st.Quota)
	}
	if got := r.phases(Contending); len(got) != 2 {
		t.Fatalf("a spare contends for %v, want both partitions", got)
	}
	r.now = r.now.Add(time.Hour)
	r.p.members([]Member{b, c})
	r.p.plan()
	if got := r.phases(Contending); len(got) != 2 {
		t.Fatalf("a spare contends for %v after an hour, want still both", got)
	}
}

// With one partition every replica contends, as a lock's followers do:
// the owner keeps it, and a follower that contends gets no handover.
func TestPlannerOnePartition(t *testing.T) {
	r := newRig(t, 1)
	r.p.members([]Member{{ID: "b", Owned: map[int]int64{0: 7}}})
	r.p.plan()
	if got := r.phases(Contending); len(got) != 1 {
		t.Fatalf("a follower of one partition contends for %v, want [0]", got)
	}

	r = newRig(t, 1)
	r.p.members(nil)
	r.p.plan()
	r.own()
	b := Member{ID: "b", Contending: []int{0}}
	r.p.members([]Member{b})
	r.now = r.now.Add(time.Hour)
	r.p.members([]Member{b})
	r.p.plan()
	if r.lanes[0].phase != Owning {
		t.Fatalf("the owner of the one partition is %v, want owning: a waiting follower takes nothing", r.lanes[0].phase)
	}
}

// A replica that stepped down from the one partition keeps standing by
// (its lane holds off by itself), as a lock's leader did.
func TestPlannerOnePartitionStepDown(t *testing.T) {
	r := newRig(t, 1)
	b := Member{ID: "b", Contending: []int{0}}
	r.p.members([]Member{b})
	r.now = r.now.Add(time.Hour)
	r.p.members([]Member{b})
	r.p.plan()
	r.own()
	r.lanes[0].avoid = true
	r.lanes[0].phase = Contending // its work ended on the step-down: it rejoined the followers
	r.p.plan()
	if r.lanes[0].phase != Contending {
		t.Fatalf("a replica that stepped down from the one partition is %v, want contending", r.lanes[0].phase)
	}
}
