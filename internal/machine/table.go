package machine

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/qmuntal/stateless"
)

// chart is a state chart as data: the one declaration that configures
// stateless (configure) and describes the chart (Describe, Graph's
// Mermaid). Machine.chart declares lockworker's; every Machine, and every
// chart instance a later change adds (one per partition), is built from it.
type chart struct {
	initial State
	// everywhere are ways out of every state that does not list their
	// trigger itself: STOP's to cleanup.
	everywhere []arrow
	states     []stateRule
}

// stateRule is one state: what runs on entry, and what each trigger does.
type stateRule struct {
	state State
	entry []entryAction
	on    []arrow
}

type (
	action func(context.Context, ...any) error
	guard  func(context.Context, ...any) bool
)

// entryAction runs on entry to its state: on every entry, or only on an
// entry by one trigger (startWork on LOCK_ACQUIRED, not on LOCK_RENEWED).
type entryAction struct {
	do      action
	only    Trigger
	trigger bool // only is set
}

// do runs a on every entry.
func do(a action) entryAction { return entryAction{do: a} }

// doOn runs a only on an entry by t.
func doOn(t Trigger, a action) entryAction { return entryAction{do: a, only: t, trigger: true} }

// arrow is what a trigger does in a state: lead to another state (when
// its guard, if any, holds), or nothing (ignored).
type arrow struct {
	trigger   Trigger
	to        State
	ignored   bool
	guard     guard
	isRoutine bool
}

// on leads to s on t.
func on(t Trigger, s State) arrow { return arrow{trigger: t, to: s} }

// ignore accepts t and drops it.
func ignore(t Trigger) arrow { return arrow{trigger: t, ignored: true} }

// when takes the arrow only while g holds.
func (a arrow) when(g guard) arrow { a.guard = g; return a }

// routine marks a step of one of the chart's two loops, a leader's
// renewal (working, renew_lock, working) or a follower's retry
// (waiting_to_acquire_lock, acquiring_lock, waiting_to_acquire_lock): it
// is logged at DEBUG, since it changes nothing an operator acts on.
func (a arrow) routine() arrow { a.isRoutine = true; return a }

// arrows are the state's own arrows, then those of c.everywhere whose
// trigger it does not list.
func (c chart) arrows(s stateRule) []arrow {
	out := slices.Clone(s.on)
	for _, a := range c.everywhere {
		if !s.handles(a.trigger) {
			out = append(out, a)
		}
	}
	return out
}

func (s stateRule) handles(t Trigger) bool {
	return slices.ContainsFunc(s.on, func(a arrow) bool { return a.trigger == t })
}

// configure sets sm up from the chart: every state, entry action, arrow
// and guard, in the order declared, and the machine's hooks. Each
// transition closes the old state's scope (its callback's context and its
// timer) before the new state's entry actions run; triggers a state does
// not list end in onUnhandled and change nothing.
func (m *Machine) configure(sm *stateless.StateMachine) {
	sm.OnTransitioning(m.onTransitioning)
	sm.OnTransitioned(m.onTransitioned)
	sm.OnUnhandledTrigger(m.onUnhandled)
	c := m.chart()
	for _, s := range c.states {
		cfg := sm.Configure(s.state)
		for _, e := range s.entry {
			if e.trigger {
				cfg.OnEntryFrom(e.only, e.do)
			} else {
				cfg.OnEntry(e.do)
			}
		}
		for _, a := range c.arrows(s) {
			var guards []stateless.GuardFunc
			if a.guard != nil {
				guards = append(guards, stateless.GuardFunc(a.guard))
			}
			if a.ignored {
				cfg.Ignore(a.trigger, guards...)
			} else {
				cfg.Permit(a.trigger, a.to, guards...)
			}
		}
	}
}

// routines are the (state, trigger) pairs of the chart's routine arrows.
var routines = sync.OnceValue(func() map[[2]int]bool {
	c := new(Machine).chart() // names its methods, never calls them
	out := map[[2]int]bool{}
	for _, s := range c.states {
		for _, a := range c.arrows(s) {
			if a.isRoutine {
				out[[2]int{int(s.state), int(a.trigger)}] = true
			}
		}
	}
	return out
})

// Routine reports whether trigger t in state from is a step of one of the
// chart's two loops: a leader renewing (RENEW_TIMER, LOCK_RENEWED) or a
// follower retrying (RETRY_TIMER, ACQUIRE_FAILED). Such a step changes
// nothing an operator acts on: the machine logs it at DEBUG, and a
// status page need not be redrawn for it. A release notice is no routine
// step: it wakes a follower because a leader left.
func Routine(from State, t Trigger) bool {
	return routines()[[2]int{int(from), int(t)}]
}

// funcName is the name stateless shows for an action or guard: the
// method's name, without the "-fm" the runtime gives a method value.
func funcName(f any) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	name = name[strings.LastIndex(name, ".")+1:]
	return strings.TrimSuffix(name, "-fm")
}
