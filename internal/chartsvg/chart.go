package chartsvg

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/lockworker/lockworker/internal/machine"
)

// ErrUnplaced is wrapped by Layout's errors: the description has a state
// or an arrow the table does not place.
var ErrUnplaced = errors.New("chartsvg: not placed by the table")

// Chart is a machine.Description placed by the table, the model its SVG
// is drawn from (the dashboard serves it on /api/chart). Edges are the
// arrows between two states, one per ordered pair with every trigger that
// takes it; Bundles the triggers drawn once from many states to one, as a
// box around their sources with one arrow out. Ignored triggers are not
// drawn.
type Chart struct {
	Description machine.Description `json:"description"`
	Width       float64             `json:"width"`
	Height      float64             `json:"height"`
	Boxes       map[string]Rect     `json:"boxes"` // by state
	Edges       []Arrow             `json:"edges"`
	Bundles     []Arrow             `json:"bundles"`
}

// Arrow is one arrow: the transitions it draws, its SVG path data, its
// label's box and, for a bundle, the box around its sources.
type Arrow struct {
	Transitions []machine.TransitionInfo `json:"transitions,omitempty"`
	Path        string                   `json:"path"`
	Label       Rect                     `json:"label,omitzero"`
	Box         Rect                     `json:"box,omitzero"`
	line        []pt
	key         [2]string // in routes for an edge, in fans for a bundle
}

// Rect is a box in SVG user units, Y down.
type Rect struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Layout places the chart d describes by the table, or fails naming every
// state and arrow the table lacks.
func Layout(d machine.Description) (Chart, error) {
	c := Chart{Description: d, Width: width, Height: height, Boxes: map[string]Rect{}}
	var errs []error
	for _, s := range d.States {
		p, ok := places[s.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: state %s", ErrUnplaced, s.Name))
		}
		c.Boxes[s.Name] = Rect{p.x - p.w/2, p.y - nodeH/2, p.w, nodeH}
	}
	for _, t := range d.Transitions {
		if err := c.add(t); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// add draws t: in its bundle if the table has one, else on the arrow
// between its states; an ignored trigger not at all.
func (c *Chart) add(t machine.TransitionInfo) error {
	list, key := &c.Edges, [2]string{t.From, t.To}
	r, ok := routes[key]
	f, bundled := fans[[2]string{t.Trigger, t.To}]
	switch {
	case t.Kind == machine.KindIgnored:
		return nil
	case bundled:
		list, key, r = &c.Bundles, [2]string{t.Trigger, t.To}, f.route
	case !ok:
		return fmt.Errorf("%w: arrow %s -> %s", ErrUnplaced, t.From, t.To)
	}
	i := slices.IndexFunc(*list, func(a Arrow) bool { return a.key == key })
	if i < 0 {
		i = len(*list)
		*list = append(*list, Arrow{Path: path(r.line), Box: f.box, line: r.line, key: key})
	}
	a := &(*list)[i]
	a.Transitions = append(a.Transitions, t)
	w, h := 0.0, float64(len(a.lines()))*lineH+2*labelPadY
	for _, l := range a.lines() {
		w = max(w, float64(len(l.text))*smallCharW+2*labelPadX)
	}
	a.Label = Rect{r.label.x - w/2, r.label.y - h/2, w, h}
	return nil
}

// Labels are 10px monospace: a character is 6 units wide, a line 12 high.
const smallCharW, lineH, labelPadX, labelPadY = 6.0, 12.0, 5.0, 3.0

type labelLine struct {
	text, trigger string
	detail        bool // an action or a guard
}

// lines is what a's label says: each trigger on a line, its actions and
// guards on lines of their own; a bundle's trigger once.
func (a Arrow) lines() (out []labelLine) {
	for _, t := range a.Transitions {
		out = append(out, labelLine{t.Trigger, t.Trigger, false})
		if a.Box != (Rect{}) {
			return out
		}
		for _, x := range t.Actions {
			out = append(out, labelLine{"/ " + x, t.Trigger, true})
		}
		for _, g := range t.Guards {
			out = append(out, labelLine{"[" + g + "]", t.Trigger, true})
		}
	}
	return out
}

// path is line as SVG path data.
func path(line []pt) string {
	d := ""
	for _, p := range line {
		d += " L" + num(p.x) + "," + num(p.y)
	}
	return "M" + d[2:]
}

// num prints v to a tenth, so the golden files do not change with float
// noise.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
