package machine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/qmuntal/stateless"
)

func TestDescribeChart(t *testing.T) {
	d, err := Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.Initial != Idle.String() {
		t.Errorf("Initial = %q, want %q", d.Initial, Idle)
	}
	var names []string
	for _, s := range d.States {
		names = append(names, s.Name)
	}
	for _, s := range States() {
		if !slices.Contains(names, s.String()) {
			t.Errorf("state %v missing from %v", s, names)
		}
	}
	if len(names) != len(States()) {
		t.Errorf("%d states described, the chart has %d: %v", len(names), len(States()), names)
	}
	var lines []string
	for _, tr := range d.Transitions {
		lines = append(lines, tr.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"idle -> acquiring_lock on TRY_ACQUIRE_LOCK (transition)",
		"acquiring_lock -> working on LOCK_ACQUIRED (transition) / startWork",
		"waiting_to_acquire_lock -> acquiring_lock on RELEASE_NOTICE (transition)",
		"waiting_to_acquire_lock -> acquiring_lock on RETRY_TIMER (transition)",
		"cleanup -> cleanup on STOP (ignored)",
		"releasing_lock -> idle on LOCK_RELEASED (transition)",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("transition %q missing from:\n%s", want, got)
		}
	}
	for _, s := range d.States {
		if s.Name == AcquiringLock.String() && !slices.Equal(s.Entry, []string{"acquire"}) {
			t.Errorf("acquiring_lock entry = %v, want [acquire]", s.Entry)
		}
	}
}

// TestDescribeDOTSections feeds describeDOT what stateless writes for the
// features the chart does not use yet (reentry, internal, guards,
// superstates), so a chart that starts using them is still read right.
func TestDescribeDOTSections(t *testing.T) {
	nop := func(context.Context, ...any) error { return nil }
	ready := func(context.Context, ...any) bool { return true }
	sm := stateless.NewStateMachine("a")
	sm.Configure("a").
		OnEntry(nop).
		Permit("GO", "b", ready).
		PermitReentry("AGAIN").
		InternalTransition("TICK", nop).
		Ignore("NOISE")
	sm.Configure("b").SubstateOf("top").Permit("BACK", "a")
	sm.Configure("top").Permit("RESET", "a")

	d, err := describeDOT(sm.ToGraph())
	if err != nil {
		t.Fatal(err)
	}
	byTrigger := map[string]TransitionInfo{}
	for _, tr := range d.Transitions {
		byTrigger[tr.Trigger] = tr
	}
	for trigger, kind := range map[string]string{
		"GO": KindTransition, "AGAIN": KindReentry, "TICK": KindInternal,
		"NOISE": KindIgnored, "BACK": KindTransition, "RESET": KindTransition,
	} {
		if got := byTrigger[trigger].Kind; got != kind {
			t.Errorf("%s: kind %q, want %q (all: %v)", trigger, got, kind, d.Transitions)
		}
	}
	if g := byTrigger["GO"].Guards; len(g) != 1 || g[0] == "" {
		t.Errorf("GO guards = %q, want one description", g)
	}
	if from := byTrigger["RESET"].From; from != "top" {
		t.Errorf("RESET from %q, want the superstate top", from)
	}
	states := map[string]StateInfo{}
	for _, s := range d.States {
		states[s.Name] = s
	}
	for _, name := range []string{"a", "b", "top"} {
		if _, ok := states[name]; !ok {
			t.Errorf("state %q missing: %v", name, d.States)
		}
	}
	if len(states["a"].Entry) != 1 {
		t.Errorf("a's entry actions = %v, want one", states["a"].Entry)
	}
}

func TestDescribeDOTEmpty(t *testing.T) {
	if _, err := describeDOT("digraph {\n}\n"); err == nil {
		t.Error("an empty graph was described without an error")
	}
}
