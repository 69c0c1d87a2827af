package chartsvg

import (
	"bytes"
	"encoding/json"
	"errors"
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

func layout(t *testing.T) Chart {
	t.Helper()
	c, err := Layout(machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChartGolden holds the chart model and its SVG, both drawn from the
// machine's description and the table: a change of either shows up as a
// diff here (go test -update to accept it).
func TestChartGolden(t *testing.T) {
	c := layout(t)
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

// TestChartIsTheMachine: the table and the machine name the same states
// and arrows. Every state has a box, every trigger the machine accepts is
// drawn exactly once (on an arrow or in the bundle; an ignored one not at
// all), and every place, route and bundle of the table is one the machine
// has, so neither can change without the other.
func TestChartIsTheMachine(t *testing.T) {
	d := machine.Describe()
	c := layout(t)
	for _, s := range d.States {
		if _, ok := places[s.Name]; !ok {
			t.Errorf("state %s has no place", s.Name)
		}
	}
	for _, tr := range d.Transitions {
		want := 1
		if tr.Kind == machine.KindIgnored {
			want = 0
		}
		if n := placements(c, tr); n != want {
			t.Errorf("%v is drawn %d times, want %d", tr, n, want)
		}
	}
	for name := range places {
		if !slices.ContainsFunc(d.States, func(s machine.StateInfo) bool { return s.Name == name }) {
			t.Errorf("the table places %s, which the machine does not have", name)
		}
	}
	for k := range routes {
		if !slices.ContainsFunc(c.Edges, func(a Arrow) bool { return a.Transitions[0].From == k[0] && a.Transitions[0].To == k[1] }) {
			t.Errorf("the table routes %s -> %s, which the machine does not have", k[0], k[1])
		}
	}
	for k := range fans {
		if !slices.ContainsFunc(c.Bundles, func(a Arrow) bool { return a.Transitions[0].Trigger == k[0] && a.Transitions[0].To == k[1] }) {
			t.Errorf("the table bundles %s into %s, which the machine does not have", k[0], k[1])
		}
	}
}

func placements(c Chart, tr machine.TransitionInfo) int {
	n := 0
	for _, a := range slices.Concat(c.Edges, c.Bundles) {
		for _, u := range a.Transitions {
			if u.From == tr.From && u.To == tr.To && u.Trigger == tr.Trigger {
				n++
			}
		}
	}
	return n
}

// TestChartRefusesWhatTheTableLacks: a state or an arrow the machine gains
// without a place in the table (work that ends gives up leadership through
// a new draining state) is an error naming each, not a chart without it.
func TestChartRefusesWhatTheTableLacks(t *testing.T) {
	d := machine.Describe()
	d.States = append(d.States, machine.StateInfo{Name: "draining", Entry: []string{"stopWork"}})
	d.Transitions = append(d.Transitions,
		machine.TransitionInfo{From: "working", To: "draining", Trigger: "WORK_ENDED", Kind: machine.KindTransition},
		machine.TransitionInfo{From: "draining", To: "cleanup", Trigger: "STOP", Kind: machine.KindTransition},
		machine.TransitionInfo{From: "pause_work", To: "idle", Trigger: "WORK_STOPPED", Kind: machine.KindTransition},
	)
	_, err := Layout(d)
	if !errors.Is(err, ErrUnplaced) {
		t.Fatalf("err = %v, want ErrUnplaced", err)
	}
	for _, want := range []string{"state draining", "arrow working -> draining", "arrow pause_work -> idle"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
}

func TestChartClean(t *testing.T) {
	for _, p := range problems(layout(t)) {
		t.Error(p)
	}
}

// TestChartCleanCatches: problems finds each kind of mistake a hand-made
// table can hold.
func TestChartCleanCatches(t *testing.T) {
	for name, tc := range map[string]struct {
		breakIt func(*Chart)
		want    string
	}{
		"label on a box":       {func(c *Chart) { c.Edges[0].Label.X = c.Boxes["acquiring_lock"].X }, "covers state"},
		"start elsewhere":      {func(c *Chart) { c.Description.Initial = "working" }, "the start arrow does not end"},
		"labels on each other": {func(c *Chart) { c.Edges[1].Label = c.Edges[0].Label }, "overlap"},
		"label on an arrow":    {func(c *Chart) { c.Edges[2].Label.X -= 60 }, "lies on"},
		"arrows crossing": {func(c *Chart) {
			c.Edges[0].line = []pt{{162, 130}, {305, 190}}
			c.Edges[1].line = []pt{{162, 190}, {305, 130}}
		}, "cross"},
		"arrow off its box":     {func(c *Chart) { c.Edges[0].line = []pt{{150, 163}, {305, 163}} }, "does not start"},
		"arrow through a box":   {func(c *Chart) { c.Edges[0].line = []pt{{162, 163}, {900, 163}, {900, 140}} }, "passes through"},
		"source out of bundle":  {func(c *Chart) { c.Bundles[0].Box.W = 300 }, "outside the box"},
		"text wider than a box": {func(c *Chart) { c.Description.States[0].Entry = []string{"aVeryLongEntryAction"} }, "too narrow"},
		"outside the drawing":   {func(c *Chart) { c.Width = 500 }, "outside the drawing"},
	} {
		t.Run(name, func(t *testing.T) {
			c := layout(t)
			tc.breakIt(&c)
			got := problems(c)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems = %q, want one with %q", got, tc.want)
			}
		})
	}
}

// problems lists what makes the drawing hard to read: text wider than its
// box, boxes on boxes, labels on boxes, labels or arrows, arrows that
// cross, pass through a box or do not touch the boxes they join, a state
// in or out of a bundle's box against what it is, anything outside the
// drawing.
func problems(c Chart) []string {
	var r report
	r.states(c)
	arrows := drawnArrows(c)
	for i, a := range arrows {
		r.line(c, a, arrows[i+1:])
		if a.label != (Rect{}) {
			r.label(c, a, i, arrows)
		}
	}
	return r
}

type report []string

func (r *report) add(format string, args ...any) { *r = append(*r, fmt.Sprintf(format, args...)) }

func (r *report) states(c Chart) {
	canvas := Rect{0, 0, c.Width, c.Height}
	for i, s := range c.Description.States {
		box := c.Boxes[s.Name]
		need := float64(len(s.Name)) * 7.2 // 12px monospace
		for _, e := range s.Entry {
			need = max(need, float64(len("entry / "+e))*smallCharW)
		}
		if need+16 > box.W {
			r.add("state %s is too narrow for its text (%v < %v)", s.Name, box.W, need+16)
		}
		if !canvas.holds(box) {
			r.add("state %s is outside the drawing", s.Name)
		}
		for _, o := range c.Description.States[i+1:] {
			if box.overlaps(c.Boxes[o.Name]) {
				r.add("states %s and %s overlap", s.Name, o.Name)
			}
		}
		for _, b := range c.Bundles {
			in := slices.ContainsFunc(b.Transitions, func(u machine.TransitionInfo) bool { return u.From == s.Name })
			if in && !b.Box.holds(box.inflate(4)) || !in && b.Box.overlaps(box) {
				r.add("state %s is outside the box of bundle %s, or inside it without being a source", s.Name, b.Transitions[0].Trigger)
			}
		}
	}
}

// arrow is a drawn arrow as problems sees it: from is a bundle's box, or
// none for the start arrow.
type arrow struct {
	name     string
	line     []pt
	from, to Rect
	label    Rect
}

func drawnArrows(c Chart) []arrow {
	out := []arrow{{name: "the start arrow", line: start, to: c.Boxes[c.Description.Initial]}}
	for _, a := range c.Edges {
		t := a.Transitions[0]
		out = append(out, arrow{t.From + " -> " + t.To, a.line, c.Boxes[t.From], c.Boxes[t.To], a.Label})
	}
	for _, a := range c.Bundles {
		t := a.Transitions[0]
		out = append(out, arrow{"bundle " + t.Trigger, a.line, a.Box, c.Boxes[t.To], a.Label})
	}
	return out
}

func (r *report) line(c Chart, a arrow, later []arrow) {
	if a.from != (Rect{}) && !onBorder(a.line[0], a.from) {
		r.add("%s does not start on its box's border", a.name)
	}
	if !onBorder(a.line[len(a.line)-1], a.to) {
		r.add("%s does not end on its box's border", a.name)
	}
	for _, p := range a.line {
		if !(Rect{0, 0, c.Width, c.Height}).contains(p) {
			r.add("%s goes outside the drawing", a.name)
		}
	}
	for _, s := range c.Description.States {
		box := c.Boxes[s.Name]
		keepOff := box.inflate(4)
		if box == a.from || box == a.to {
			keepOff = box.inflate(-1) // its ends touch it
		}
		if hits(a.line, keepOff) {
			r.add("%s passes through state %s", a.name, s.Name)
		}
	}
	for _, o := range later {
		if crosses(a.line, o.line) {
			r.add("%s and %s cross", a.name, o.name)
		}
	}
}

func (r *report) label(c Chart, a arrow, i int, arrows []arrow) {
	if !(Rect{0, 0, c.Width, c.Height}).holds(a.label) {
		r.add("the label of %s is outside the drawing", a.name)
	}
	for _, s := range c.Description.States {
		if a.label.overlaps(c.Boxes[s.Name].inflate(2)) {
			r.add("the label of %s covers state %s", a.name, s.Name)
		}
	}
	for _, b := range c.Bundles {
		if a.label.overlaps(b.Box) && !b.Box.holds(a.label) {
			r.add("the label of %s straddles the box of bundle %s", a.name, b.Transitions[0].Trigger)
		}
	}
	for j, o := range arrows {
		if j != i && hits(o.line, a.label.inflate(2)) {
			r.add("the label of %s lies on %s", a.name, o.name)
		}
		if j > i && o.label != (Rect{}) && a.label.overlaps(o.label.inflate(2)) {
			r.add("the labels of %s and %s overlap", a.name, o.name)
		}
	}
}

func (r Rect) inflate(d float64) Rect { return Rect{r.X - d, r.Y - d, r.W + 2*d, r.H + 2*d} }

func (r Rect) contains(p pt) bool {
	return p.x >= r.X && p.x <= r.X+r.W && p.y >= r.Y && p.y <= r.Y+r.H
}

func (r Rect) holds(o Rect) bool {
	return r.contains(pt{o.X, o.Y}) && r.contains(pt{o.X + o.W, o.Y + o.H})
}

func (r Rect) overlaps(o Rect) bool {
	return r.X < o.X+o.W && o.X < r.X+r.W && r.Y < o.Y+o.H && o.Y < r.Y+r.H
}

func onBorder(p pt, r Rect) bool { return r.inflate(0.5).contains(p) && !r.inflate(-0.5).contains(p) }

// hits reports whether the polyline enters r.
func hits(line []pt, r Rect) bool {
	corners := []pt{{r.X, r.Y}, {r.X + r.W, r.Y}, {r.X + r.W, r.Y + r.H}, {r.X, r.Y + r.H}}
	for i := 1; i < len(line); i++ {
		a, b := line[i-1], line[i]
		if r.contains(a) || r.contains(b) {
			return true
		}
		for k := range corners {
			if segmentsCross(a, b, corners[k], corners[(k+1)%4]) {
				return true
			}
		}
	}
	return false
}

func crosses(l, m []pt) bool {
	for i := 1; i < len(l); i++ {
		for j := 1; j < len(m); j++ {
			if segmentsCross(l[i-1], l[i], m[j-1], m[j]) {
				return true
			}
		}
	}
	return false
}

// segmentsCross reports whether segments ab and cd cross at a point inside
// both (touching ends do not count).
func segmentsCross(a, b, c, d pt) bool {
	cross := func(o, p, q pt) float64 { return (p.x-o.x)*(q.y-o.y) - (p.y-o.y)*(q.x-o.x) }
	return cross(c, d, a)*cross(c, d, b) < 0 && cross(a, b, c)*cross(a, b, d) < 0
}
