package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qmuntal/stateless"
)

// Format is a way Graph can draw the chart.
type Format int

// The graph formats.
const (
	FormatDOT     Format = iota // Graphviz DOT, as stateless's ToGraph writes it
	FormatMermaid               // a Mermaid stateDiagram-v2
)

var formatNames = [...]string{FormatDOT: "dot", FormatMermaid: "mermaid"}

// String is the format's name, as lockworker graph --format takes it.
func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// MarshalText writes f as its name.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a format by its name, dot or mermaid.
func (f *Format) UnmarshalText(text []byte) error {
	for i, name := range formatNames {
		if string(text) == name {
			*f = Format(i)
			return nil
		}
	}
	return fmt.Errorf("want dot or mermaid, got %q", string(text))
}

// Graph renders the chart as DOT (stateless's ToGraph) or Mermaid (a
// stateDiagram-v2 written from the Description). Both come from the chart
// declaration (Machine.chart) that configures the machine, so neither can
// disagree with it. Graph configures a fresh stateless machine from that
// declaration, so it never reads the running machine and is safe at any
// time; the graph always starts in idle.
func (m *Machine) Graph(format Format) (string, error) {
	c := m.chart()
	sm := stateless.NewStateMachine(c.initial)
	m.configure(sm)
	// Entry actions are method values, which the runtime names "acquire-fm".
	dot := strings.ReplaceAll(sm.ToGraph(), "-fm", "")
	switch format {
	case FormatDOT:
		return dot, nil
	case FormatMermaid:
		return mermaid(c.describe()), nil
	default:
		return "", fmt.Errorf("machine: unknown graph format %v (want dot or mermaid)", format)
	}
}

// Chart renders the chart for `lockworker graph`, which has no Redis: a
// graph only names the machine's methods, never calls them, so a zero
// Machine draws the same chart as a running one.
func Chart(format Format) (string, error) {
	return new(Machine).Graph(format)
}

// mermaid writes d as a stateDiagram-v2 in the order of the DOT that
// stateless writes: states by name with their entry actions, then by
// source state the transitions, by trigger, grouped by target, and the
// initial state last. Ignored triggers change no state and are left out.
func mermaid(d Description) string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	states := slices.SortedFunc(slices.Values(d.States), func(x, y StateInfo) int { return strings.Compare(x.Name, y.Name) })
	for _, s := range states {
		fmt.Fprintf(&b, "    %s\n", s.Name)
		for _, a := range s.Entry {
			fmt.Fprintf(&b, "    %s : entry / %s\n", s.Name, a)
		}
	}
	for _, s := range states {
		var out []TransitionInfo
		for _, t := range d.Transitions {
			if t.From == s.Name && t.Kind != KindIgnored {
				out = append(out, t)
			}
		}
		slices.SortStableFunc(out, func(x, y TransitionInfo) int { return strings.Compare(x.Trigger, y.Trigger) })
		for len(out) > 0 {
			to := out[0].To
			for _, t := range out {
				if t.To == to {
					fmt.Fprintf(&b, "    %s --> %s : %s\n", t.From, t.To, t.label())
				}
			}
			out = slices.DeleteFunc(out, func(t TransitionInfo) bool { return t.To == to })
		}
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", d.Initial)
	return b.String()
}

// label is the transition as stateless labels it: "TRIGGER / actions [guard]".
func (t TransitionInfo) label() string {
	s := t.Trigger
	if len(t.Actions) > 0 {
		s += " / " + strings.Join(t.Actions, ", ")
	}
	for _, g := range t.Guards {
		s += " [" + g + "]"
	}
	return s
}
