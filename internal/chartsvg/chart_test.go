package chartsvg

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/machine"
)

var update = flag.Bool("update", false, "rewrite testdata/chart.json and testdata/chart.svg from the machine's chart")

// TestChartGolden holds the chart model and its SVG, both derived from
// the machine's graph: a new state or trigger, or a change of the layout,
// shows up as a diff here (go test -update to accept it).
func TestChartGolden(t *testing.T) {
	c := Layout(machine.Describe())
	model, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "chart.json", append(model, '\n'))
	golden(t, "chart.svg", c.SVG())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the chart (go test -update to accept):\n%s", path, got)
	}
}

// TestChartCoversMachine: every trigger the machine accepts is on the
// chart, on exactly one arrow, bundle or ignored list, and every state has
// a box.
func TestChartCoversMachine(t *testing.T) {
	d := machine.Describe()
	c := Layout(d)
	for _, s := range d.States {
		if !slices.ContainsFunc(c.States, func(cs ChartState) bool { return cs.Name == s.Name }) {
			t.Errorf("state %s has no box", s.Name)
		}
	}
	for _, tr := range d.Transitions {
		if n := placements(c, tr); n != 1 {
			t.Errorf("%v is drawn %d times, want once", tr, n)
		}
	}
	if len(c.Bundles) != 1 || c.Bundles[0].Trigger != machine.Stop.String() || c.Bundles[0].To != machine.Cleanup.String() {
		t.Errorf("bundles = %+v, want STOP into cleanup (it comes from most states)", c.Bundles)
	}
}

func placements(c Chart, tr machine.TransitionInfo) int {
	n := 0
	for _, e := range c.Edges {
		for _, et := range e.Triggers {
			if e.From == tr.From && e.To == tr.To && et.Trigger == tr.Trigger {
				n++
			}
		}
	}
	for _, b := range c.Bundles {
		if b.Trigger == tr.Trigger && b.To == tr.To && slices.Contains(b.From, tr.From) {
			n++
		}
	}
	for _, i := range c.Ignored {
		if i.State == tr.From && i.Trigger == tr.Trigger {
			n++
		}
	}
	return n
}

// TestChartNewTrigger: a trigger and a state the chart does not have yet
// (work that ends gives up leadership through a new draining state) get an
// arrow, a box and a label without a change to this package, and the
// drawing stays clean.
func TestChartNewTrigger(t *testing.T) {
	d := machine.Describe()
	d.States = append(d.States, machine.StateInfo{Name: "draining", Entry: []string{"stopWork"}})
	d.Transitions = append(d.Transitions,
		machine.TransitionInfo{From: "working", To: "draining", Trigger: "WORK_ENDED", Kind: machine.KindTransition},
		machine.TransitionInfo{From: "draining", To: "releasing_lock", Trigger: "WORK_STOPPED", Kind: machine.KindTransition},
		machine.TransitionInfo{From: "draining", To: "cleanup", Trigger: "STOP", Kind: machine.KindTransition},
	)
	c := Layout(d)
	svg := string(c.SVG())
	for _, want := range []string{
		`data-state="draining"`,
		`<g class="edge" data-from="working" data-to="draining">`,
		`data-trigger="WORK_ENDED"`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	if !slices.Contains(c.Bundles[0].From, "draining") {
		t.Errorf("STOP from draining not in the bundle: %v", c.Bundles[0].From)
	}
	checkClean(t, c)
}

func TestChartClean(t *testing.T) {
	c := Layout(machine.Describe())
	checkClean(t, c)
	again := Layout(machine.Describe())
	if !bytes.Equal(c.SVG(), again.SVG()) {
		t.Error("two layouts of the same chart differ")
	}
}

// checkClean fails on what makes a chart hard to read: boxes on boxes,
// labels on boxes or on labels, a state caught in a bundle it is not part
// of, anything outside the drawing.
func checkClean(t *testing.T, c Chart) {
	t.Helper()
	canvas := Rect{0, 0, c.Width, c.Height}
	inside := func(r Rect) bool {
		return r.X >= canvas.X && r.Y >= canvas.Y && r.X+r.W <= canvas.W && r.Y+r.H <= canvas.H
	}
	var labels []Rect
	var names []string
	for _, e := range c.Edges {
		labels = append(labels, e.Label)
		names = append(names, fmt.Sprintf("label of %s->%s", e.From, e.To))
	}
	for _, b := range c.Bundles {
		labels = append(labels, b.Label)
		names = append(names, "label of bundle "+b.Trigger)
	}
	for i, s := range c.States {
		if !inside(s.Box) {
			t.Errorf("state %s at %+v is outside the %vx%v drawing", s.Name, s.Box, c.Width, c.Height)
		}
		for _, o := range c.States[i+1:] {
			if s.Box.overlaps(o.Box) {
				t.Errorf("states %s and %s overlap", s.Name, o.Name)
			}
		}
		for j, l := range labels {
			if l.overlaps(s.Box) {
				t.Errorf("%s covers state %s", names[j], s.Name)
			}
		}
		for _, b := range c.Bundles {
			if !slices.Contains(b.From, s.Name) && b.Box.overlaps(s.Box) {
				t.Errorf("state %s sits in the box of bundle %s without being a source", s.Name, b.Trigger)
			}
		}
	}
	for i, l := range labels {
		if !inside(l) {
			t.Errorf("%s is outside the drawing", names[i])
		}
		for j := i + 1; j < len(labels); j++ {
			if l.overlaps(labels[j]) {
				t.Errorf("%s and %s overlap", names[i], names[j])
			}
		}
	}
}
