package machine

import (
	"errors"
	"fmt"
	"html"
	"strings"
)

// Description is the chart as data: its states with their entry actions and
// every trigger each state accepts. Describe reads it from the DOT that
// stateless writes for the chart (Chart("dot"), what `lockworker graph`
// prints), so a picture drawn from it cannot drift from the machine.
type Description struct {
	// Initial is the state the machine starts in.
	Initial string `json:"initial"`
	// States in the DOT's order (by name).
	States []StateInfo `json:"states"`
	// Transitions in the DOT's order: by source state, then by trigger.
	Transitions []TransitionInfo `json:"transitions"`
}

// StateInfo is one state of the chart.
type StateInfo struct {
	Name string `json:"name"`
	// Entry lists the actions run on every entry, e.g. "acquire".
	Entry []string `json:"entry,omitempty"`
}

// The kinds of TransitionInfo, as stateless's graph sections name them.
const (
	KindTransition = "transition" // leaves From for To
	KindReentry    = "reentry"    // leaves From and enters it again
	KindInternal   = "internal"   // runs an action and stays, no exit or entry
	KindIgnored    = "ignored"    // accepted and dropped: nothing happens
)

// TransitionInfo is one trigger accepted in one state.
type TransitionInfo struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Trigger string `json:"trigger"`
	// Kind is KindTransition, KindReentry, KindInternal or KindIgnored.
	Kind string `json:"kind"`
	// Actions are entry actions of To that run only on this trigger,
	// e.g. startWork on LOCK_ACQUIRED.
	Actions []string `json:"actions,omitempty"`
	// Guards describe the conditions the trigger needs, if any.
	Guards []string `json:"guards,omitempty"`
}

// Describe returns the chart as data; see Description.
func Describe() (Description, error) {
	dot, err := Chart("dot")
	if err != nil {
		return Description{}, err
	}
	return describeDOT(dot)
}

// describeDOT reads the node and edge lines of stateless's DOT with the
// patterns the Mermaid translation uses; subgraph and style lines carry
// nothing a Description holds.
func describeDOT(dot string) (Description, error) {
	var d Description
	for line := range strings.SplitSeq(dot, "\n") {
		if n := dotNode.FindStringSubmatch(line); n != nil {
			d.States = append(d.States, describeNode(unquote(n[1]), n[2]))
			continue
		}
		e := dotEdge.FindStringSubmatch(line)
		if e == nil {
			continue
		}
		from, to := unquote(e[1]), unquote(e[2])
		switch {
		case from == "init":
			d.Initial = to
		case e[3] == `""`:
			// a superstate's initial transition: not a trigger
		default:
			d.Transitions = append(d.Transitions, describeEdge(from, to, e[3])...)
		}
	}
	if d.Initial == "" || len(d.States) == 0 || len(d.Transitions) == 0 {
		return Description{}, errors.New("machine: no initial state, states or transitions found in the DOT graph")
	}
	return d, nil
}

// describeNode reads a label such as "working|entry / armRenewTimer"; a
// superstate separates its actions with a dashed line instead of "|".
func describeNode(name, label string) StateInfo {
	s := StateInfo{Name: name}
	_, actions, ok := strings.Cut(label, "|")
	if !ok {
		_, actions, _ = strings.Cut(label, `\n----------\n`)
	}
	for a := range strings.SplitSeq(actions, `\n`) {
		if act, ok := strings.CutPrefix(html.UnescapeString(a), "entry / "); ok {
			s.Entry = append(s.Entry, act)
		}
	}
	return s
}

// describeEdge reads an edge's HTML label: rows of "TRIGGER / a, b [guard]",
// grouped under section headers (Reentry, Internal, Ignored); rows before
// any header are plain transitions.
func describeEdge(from, to, label string) []TransitionInfo {
	var out []TransitionInfo
	kind := KindTransition
	for _, row := range dotRow.FindAllStringSubmatch(label, -1) {
		cell := row[1]
		if section, ok := strings.CutPrefix(cell, "<B>"); ok {
			kind = strings.ToLower(strings.TrimSuffix(section, "</B>"))
			continue
		}
		out = append(out, describeRow(from, to, kind, html.UnescapeString(cell)))
	}
	return out
}

func describeRow(from, to, kind, row string) TransitionInfo {
	t := TransitionInfo{From: from, To: to, Kind: kind}
	head, guards, _ := strings.Cut(row, " [")
	if guards != "" {
		for g := range strings.SplitSeq(strings.TrimSuffix(guards, "]"), "] [") {
			t.Guards = append(t.Guards, g)
		}
	}
	trigger, actions, _ := strings.Cut(head, " / ")
	t.Trigger = trigger
	if actions != "" {
		t.Actions = strings.Split(actions, ", ")
	}
	return t
}

// String is one line per transition, for tests and debugging.
func (t TransitionInfo) String() string {
	s := fmt.Sprintf("%s -> %s on %s (%s)", t.From, t.To, t.Trigger, t.Kind)
	if len(t.Actions) > 0 {
		s += " / " + strings.Join(t.Actions, ", ")
	}
	return s
}
