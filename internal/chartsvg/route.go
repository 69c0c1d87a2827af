package chartsvg

import (
	"cmp"
	"math"
	"slices"
)

// bends are the offsets tried, in order, for the middle of an arrow, to the
// left of its direction; a pair of opposite arrows never goes straight, so
// the two stay apart.
var (
	bends     = []float64{0, 24, -24, 48, -48, 72, -72, 96, -96, 120, -120}
	pairBends = []float64{20, 40, 60, 80, -20, -40}
)

// route draws every edge, self loop and bundle of a placed chart.
func route(c *Chart) {
	boxes := map[string]Rect{}
	var all []Rect
	for _, s := range c.States {
		boxes[s.Name] = s.Box
		all = append(all, s.Box)
	}
	at := map[string]int{}
	for i, s := range c.States {
		at[s.Name] = i
	}
	var placed obstacles
	for i := range c.Bundles {
		b := &c.Bundles[i]
		b.Box = bundleBox(*b, at, all)
		w, h := labelSize([]labelLine{{text: b.Trigger}})
		b.curve, b.Label = bundleArrow(b.Box, boxes[b.To], w, h)
		placed.labels, placed.curves = append(placed.labels, b.Label), append(placed.curves, b.curve)
	}
	routeEdges(c, boxes, all, placed)
	init := boxes[c.Initial]
	c.start = quad(point{init.X - 30, init.Y + init.H/2}, point{init.X - 15, init.Y + init.H/2}, point{init.X, init.Y + init.H/2})
}

// obstacles are the labels and arrows placed so far: later arrows keep off
// the labels, later labels off the arrows.
type obstacles struct {
	labels []Rect
	curves []curve
}

// without is o less its entry i.
func (o obstacles) without(i int) obstacles {
	return obstacles{slices.Delete(slices.Clone(o.labels), i, i+1), slices.Delete(slices.Clone(o.curves), i, i+1)}
}

// routeEdges bends every edge around the boxes and what is placed: short
// arrows first (they have the least room to move, and the long ones can go
// around them), and twice, so the second time each arrow sees every other
// one and a label placed early can step off an arrow drawn after it.
func routeEdges(c *Chart, boxes map[string]Rect, all []Rect, placed obstacles) {
	order := make([]int, len(c.Edges))
	for i := range order {
		order[i] = i
	}
	length := func(e ChartEdge) float64 {
		d := boxes[e.To].center().sub(boxes[e.From].center())
		return math.Hypot(d.x, d.y)
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(length(c.Edges[i]), length(c.Edges[j])) })
	slot := map[int]int{} // edge -> its index in placed
	for pass := range 2 {
		for _, i := range order {
			e := &c.Edges[i]
			others := placed
			if pass > 0 {
				others = placed.without(slot[i])
			}
			w, h := labelSize(labelLines(e.Triggers))
			if e.From == e.To {
				e.curve, e.Label = selfLoop(boxes[e.From], w, h)
			} else {
				twin := slices.ContainsFunc(c.Edges, func(o ChartEdge) bool { return o.From == e.To && o.To == e.From })
				e.curve, e.Label = bend(boxes[e.From], boxes[e.To], w, h, twin, all, others.labels, others.curves)
			}
			if pass == 0 {
				slot[i] = len(placed.labels)
				placed.labels, placed.curves = append(placed.labels, e.Label), append(placed.curves, e.curve)
			} else {
				placed.labels[slot[i]], placed.curves[slot[i]] = e.Label, e.curve
			}
		}
	}
}

// Weights of what bend avoids: a label on a box or on another label
// hides text; an arrow through a box misleads; an arrow under a label
// only hides a stretch of line.
const (
	labelOnText  = 10
	arrowOnBox   = 4
	arrowOnLabel = 1
)

// labelAt are the places along an arrow tried for its label, in order.
var labelAt = []float64{0.5, 0.4, 0.6, 0.3, 0.7}

// bend picks, over the offsets and the label's places along the arrow,
// the first arrow and label with nothing in the way; failing that, the one
// whose obstacles weigh least. Obstacles are every box but the arrow's
// ends, and the labels and arrows placed before.
func bend(from, to Rect, w, h float64, twin bool, boxes, labels []Rect, curves []curve) (curve, Rect) {
	tries := bends
	if twin {
		tries = pairBends
	}
	p0, p2 := from.center(), to.center()
	dir := p2.sub(p0)
	n := point{dir.y, -dir.x}.scale(1 / math.Hypot(dir.x, dir.y)) // left of the direction
	var best curve
	var bestLabel Rect
	bestScore := math.MaxInt
	for _, b := range tries {
		c := quad(p0, p0.lerp(p2, 0.5).add(n.scale(2*b)), p2).clip(from, to)
		score := 0
		for _, r := range boxes {
			if r != from && r != to && curveHits(c, r.inflate(6)) {
				score += arrowOnBox
			}
		}
		for _, l := range labels {
			if curveHits(c, l) {
				score += arrowOnLabel
			}
		}
		for _, t := range labelAt {
			label := rectAround(c.at(t), w, h)
			s := score + labelScore(label, boxes, labels, curves)
			if s < bestScore {
				best, bestLabel, bestScore = c, label, s
			}
			if bestScore == 0 {
				return best, bestLabel
			}
		}
	}
	return best, bestLabel
}

// labelScore weighs what a label would cover.
func labelScore(label Rect, boxes, labels []Rect, curves []curve) int {
	s := 0
	for _, r := range boxes {
		if label.overlaps(r.inflate(3)) {
			s += labelOnText
		}
	}
	for _, l := range labels {
		if label.overlaps(l.inflate(2)) {
			s += labelOnText
		}
	}
	for _, c := range curves {
		if curveHits(c, label) {
			s += arrowOnLabel
		}
	}
	return s
}

func curveHits(c curve, r Rect) bool {
	pts := c.samples(24)
	for i := 1; i < len(pts); i++ {
		if segmentHitsRect(pts[i-1], pts[i], r) {
			return true
		}
	}
	return false
}

// selfLoop is an arc over the top of a box, its label above it.
func selfLoop(r Rect, w, h float64) (curve, Rect) {
	cx := r.X + r.W/2
	c := curve{point{cx - 14, r.Y}, point{cx - 34, r.Y - 40}, point{cx + 34, r.Y - 40}, point{cx + 14, r.Y}}
	return c, Rect{cx - w/2, r.Y - 34 - h, w, h}
}

// bundleArrow leaves the bundle's box straight towards its target: down or
// up when the target sits under or over the box, sideways when beside it,
// else along the line between their centres.
func bundleArrow(box, to Rect, w, h float64) (curve, Rect) {
	tc := to.center()
	var p0, p3 point
	switch {
	case tc.x > box.X && tc.x < box.X+box.W && to.Y >= box.Y+box.H:
		p0, p3 = point{tc.x, box.Y + box.H}, point{tc.x, to.Y}
	case tc.x > box.X && tc.x < box.X+box.W && to.Y+to.H <= box.Y:
		p0, p3 = point{tc.x, box.Y}, point{tc.x, to.Y + to.H}
	case tc.y > box.Y && tc.y < box.Y+box.H && to.X >= box.X+box.W:
		p0, p3 = point{box.X + box.W, tc.y}, point{to.X, tc.y}
	case tc.y > box.Y && tc.y < box.Y+box.H && to.X+to.W <= box.X:
		p0, p3 = point{box.X, tc.y}, point{to.X + to.W, tc.y}
	default:
		line := quad(box.center(), box.center().lerp(tc, 0.5), tc)
		c := line.sub(line.boundary(box, 0, 1), line.boundary(to, 1, 0))
		return c, rectAround(c.at(0.5), w, h)
	}
	c := quad(p0, p0.lerp(p3, 0.5), p3)
	mid := c.at(0.5)
	if p0.x == p3.x { // vertical: the label goes beside the arrow, not on it
		return c, Rect{mid.x + 6, mid.y - h/2, w, h}
	}
	return c, rectAround(mid, w, h)
}

// normalize moves everything so the drawing starts at the margin and sets
// the chart's size, then writes the path data.
func (c *Chart) normalize() {
	var bb Rect
	first := true
	grow := func(r Rect) {
		if first {
			bb, first = r, false
			return
		}
		bb = bb.union(r)
	}
	for _, s := range c.States {
		grow(s.Box)
	}
	for _, e := range c.Edges {
		grow(e.Label)
		grow(e.curve.bounds())
	}
	for _, b := range c.Bundles {
		grow(b.Box)
		grow(b.Label)
	}
	grow(c.start.bounds().inflate(5)) // the dot at its start
	d := point{margin - bb.X, margin - bb.Y}
	c.start = c.start.shift(d)
	c.Start = c.start.path()
	for i := range c.States {
		c.States[i].Box = round(c.States[i].Box.shift(d))
	}
	for i := range c.Edges {
		e := &c.Edges[i]
		e.curve, e.Label = e.curve.shift(d), round(e.Label.shift(d))
		e.Path = e.curve.path()
	}
	for i := range c.Bundles {
		b := &c.Bundles[i]
		b.curve, b.Box, b.Label = b.curve.shift(d), round(b.Box.shift(d)), round(b.Label.shift(d))
		b.Path = b.curve.path()
	}
	c.Width, c.Height = math.Ceil(bb.W+2*margin), math.Ceil(bb.H+2*margin)
}
