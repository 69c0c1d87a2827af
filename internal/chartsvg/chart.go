package chartsvg

import (
	"fmt"
	"slices"

	"github.com/lockworker/lockworker/internal/machine"
)

// Chart is the state chart laid out for drawing: the model its SVG is
// drawn from (the dashboard serves it as JSON on /api/chart). Nothing in it
// is written by hand: the states and triggers come from the
// machine.Description, the places from Layout.
type Chart struct {
	Initial string       `json:"initial"`
	Width   float64      `json:"width"`
	Height  float64      `json:"height"`
	States  []ChartState `json:"states"`
	// Edges are the arrows between two states (or a state and itself),
	// one per ordered pair, each with every trigger that takes it.
	Edges []ChartEdge `json:"edges"`
	// Bundles are triggers that lead from many states to one: drawn once,
	// as a box around their sources with one arrow out of it.
	Bundles []ChartBundle `json:"bundles"`
	// Ignored lists triggers a state accepts and drops; not drawn.
	Ignored []EdgeTrigger `json:"ignored"`
	// Start is the short arrow into the initial state.
	Start string `json:"start"`
	start curve
}

// ChartState is a state and its box.
type ChartState struct {
	Name  string   `json:"name"`
	Entry []string `json:"entry,omitempty"`
	Col   int      `json:"col"`
	Row   int      `json:"row"`
	Box   Rect     `json:"box"`
}

// EdgeTrigger is one trigger on an edge.
type EdgeTrigger struct {
	// State is set only in Chart.Ignored: the state that drops it.
	State   string   `json:"state,omitempty"`
	Trigger string   `json:"trigger"`
	Kind    string   `json:"kind"`
	Actions []string `json:"actions,omitempty"`
	Guards  []string `json:"guards,omitempty"`
}

// ChartEdge is one arrow.
type ChartEdge struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	Triggers []EdgeTrigger `json:"triggers"`
	Path     string        `json:"path"`
	Label    Rect          `json:"label"`
	curve    curve
}

// ChartBundle is one trigger from many states to one.
type ChartBundle struct {
	Trigger string   `json:"trigger"`
	To      string   `json:"to"`
	From    []string `json:"from"`
	Box     Rect     `json:"box"`
	Path    string   `json:"path"`
	Label   Rect     `json:"label"`
	curve   curve
}

// Rect is a box in SVG user units, Y down.
type Rect struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// bundleMin is the fewest sources a trigger needs to be drawn as a bundle,
// besides coming from at least half the states.
const bundleMin = 3

// classify sorts the described transitions into drawn edges (in the order
// of their first trigger), bundles and ignored triggers.
func classify(d machine.Description) (edges []ChartEdge, bundles []ChartBundle, ignored []EdgeTrigger) {
	type key struct{ trigger, to string }
	sources := map[key][]string{}
	for _, t := range d.Transitions {
		if t.Kind == machine.KindTransition && t.From != t.To {
			k := key{t.Trigger, t.To}
			sources[k] = append(sources[k], t.From)
		}
	}
	isBundled := func(k key) bool {
		n := len(sources[k])
		return n >= bundleMin && 2*n >= len(d.States)
	}
	index := map[[2]string]int{}
	for _, t := range d.Transitions {
		et := EdgeTrigger{Trigger: t.Trigger, Kind: t.Kind.String(), Actions: t.Actions, Guards: t.Guards}
		k := key{t.Trigger, t.To}
		switch {
		case t.Kind == machine.KindIgnored:
			et.State = t.From
			ignored = append(ignored, et)
		case t.Kind == machine.KindTransition && t.From != t.To && isBundled(k):
			if !slices.ContainsFunc(bundles, func(b ChartBundle) bool { return b.Trigger == k.trigger && b.To == k.to }) {
				bundles = append(bundles, ChartBundle{Trigger: k.trigger, To: k.to, From: sources[k]})
			}
		default:
			pair := [2]string{t.From, t.To}
			i, ok := index[pair]
			if !ok {
				i = len(edges)
				index[pair] = i
				edges = append(edges, ChartEdge{From: t.From, To: t.To})
			}
			edges[i].Triggers = append(edges[i].Triggers, et)
		}
	}
	return edges, bundles, ignored
}

// labelLines is what an edge's label says: each trigger on a line, its
// actions and guards on lines of their own.
func labelLines(ts []EdgeTrigger) []labelLine {
	var out []labelLine
	for _, t := range ts {
		out = append(out, labelLine{text: t.Trigger, trigger: t.Trigger})
		for _, a := range t.Actions {
			out = append(out, labelLine{text: "/ " + a, trigger: t.Trigger, detail: true})
		}
		for _, g := range t.Guards {
			out = append(out, labelLine{text: fmt.Sprintf("[%s]", g), trigger: t.Trigger, detail: true})
		}
	}
	return out
}

type labelLine struct {
	text    string
	trigger string
	detail  bool
}
