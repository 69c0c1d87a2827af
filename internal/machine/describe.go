package machine

import (
	"fmt"
	"strings"
)

// Description is the chart as data: its states with their entry actions and
// every trigger each state accepts. Describe reads it from the same
// declaration that configures stateless (Machine.chart), so a picture
// drawn from it cannot drift from the machine.
type Description struct {
	// Initial is the state the machine starts in.
	Initial string `json:"initial"`
	// States in the chart's order (idle first).
	States []StateInfo `json:"states"`
	// Transitions by source state in the chart's order, each state's in the
	// order it lists them, STOP's way out last.
	Transitions []TransitionInfo `json:"transitions"`
}

// StateInfo is one state of the chart.
type StateInfo struct {
	Name string `json:"name"`
	// Entry lists the actions run on every entry, e.g. "acquire".
	Entry []string `json:"entry,omitempty"`
}

// Kind is what a trigger accepted in a state does: a transition, or
// nothing (ignored). It is written as its name in JSON.
type Kind int

// The kinds of TransitionInfo.
const (
	KindTransition Kind = iota // leaves From for To
	KindIgnored                // accepted and dropped: nothing happens
)

var kindNames = [...]string{KindTransition: "transition", KindIgnored: "ignored"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// MarshalText writes k as its name, as the description's JSON shows it.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// TransitionInfo is one trigger accepted in one state.
type TransitionInfo struct {
	From string `json:"from"`
	// To is From for an ignored trigger.
	To      string `json:"to"`
	Trigger string `json:"trigger"`
	// Kind is KindTransition or KindIgnored.
	Kind Kind `json:"kind"`
	// Actions are entry actions of To that run only on this trigger,
	// e.g. startWork on LOCK_ACQUIRED.
	Actions []string `json:"actions,omitempty"`
	// Guards name the conditions the trigger needs, if any.
	Guards []string `json:"guards,omitempty"`
}

// Describe returns the chart as data; see Description.
func Describe() Description {
	return new(Machine).chart().describe() // names its methods, never calls them
}

func (c chart) describe() Description {
	d := Description{Initial: c.initial.String()}
	rules := map[State]stateRule{}
	for _, s := range c.states {
		rules[s.state] = s
		info := StateInfo{Name: s.state.String()}
		for _, e := range s.entry {
			if !e.trigger {
				info.Entry = append(info.Entry, funcName(e.do))
			}
		}
		d.States = append(d.States, info)
	}
	for _, s := range c.states {
		for _, a := range c.arrows(s) {
			t := TransitionInfo{From: s.state.String(), To: a.to.String(), Trigger: a.trigger.String(), Kind: KindTransition}
			if a.ignored {
				t.To, t.Kind = t.From, KindIgnored
			} else {
				for _, e := range rules[a.to].entry {
					if e.trigger && e.only == a.trigger {
						t.Actions = append(t.Actions, funcName(e.do))
					}
				}
			}
			if a.guard != nil {
				t.Guards = []string{funcName(a.guard)}
			}
			d.Transitions = append(d.Transitions, t)
		}
	}
	return d
}

// String is one line per transition, for tests and debugging.
func (t TransitionInfo) String() string {
	s := fmt.Sprintf("%s -> %s on %s (%s)", t.From, t.To, t.Trigger, t.Kind)
	if len(t.Actions) > 0 {
		s += " / " + strings.Join(t.Actions, ", ")
	}
	return s
}
