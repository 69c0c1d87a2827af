package chartsvg

import (
	"math"
	"slices"

	"github.com/lockworker/lockworker/internal/machine"
)

// Sizes, in SVG units. Chart text is monospace (12px names, 10px details),
// so its width is known here without a font: a character is 0.6em.
const (
	nameCharW  = 7.2
	smallCharW = 6.0
	lineH      = 12.0
	nodeH      = 46.0
	nodePadX   = 14.0
	minNodeW   = 84.0
	labelPadX  = 5.0
	labelPadY  = 3.0
	rowGap     = 62.0
	colGapMin  = 72.0
	colGapMax  = 170.0
	margin     = 16.0
	bundlePad  = 14.0
	// searchLimit bounds the exhaustive search: past it, the cheapest
	// placement tried so far stands.
	searchLimit = 200_000
)

// Layout places the states in columns by their distance from the
// initial state (breadth first over the drawn edges; a state reached only
// through a bundle goes one column right of its nearest source), picks the
// rows within the columns that make the fewest crossings and detours by
// trying every assignment, then routes the arrows around the boxes. States
// that are no bundle's source (where a bundle leads: STOP's cleanup and
// what follows it) get a row of their own above or below the others, in
// whichever columns cost least, so no bundle's box can catch them. The
// result depends only on the description, so the picture is stable.
func Layout(d machine.Description) Chart {
	edges, bundles, ignored := classify(d)
	c := Chart{Initial: d.Initial, Edges: edges, Bundles: bundles, Ignored: ignored}
	for _, s := range d.States {
		c.States = append(c.States, ChartState{Name: s.Name, Entry: s.Entry})
	}
	col := columns(c.States, d.Initial, edges, bundles)
	for i := range c.States {
		c.States[i].Col = col[c.States[i].Name]
	}
	p := newPlacer(c.States, edges, bundles, d.Initial)
	cells := p.best()
	boxes := p.boxes(cells)
	for i := range c.States {
		c.States[i].Col, c.States[i].Row, c.States[i].Box = cells[i].col, cells[i].row, boxes[i]
	}
	route(&c)
	c.normalize()
	return c
}

// columns numbers each state's column; see Layout.
func columns(states []ChartState, initial string, edges []ChartEdge, bundles []ChartBundle) map[string]int {
	next := map[string][]string{}
	for _, e := range edges {
		if e.From != e.To {
			next[e.From] = append(next[e.From], e.To)
		}
	}
	col := map[string]int{}
	bfs := func(start string, c int) {
		col[start] = c
		for queue := []string{start}; len(queue) > 0; queue = queue[1:] {
			for _, n := range next[queue[0]] {
				if _, ok := col[n]; !ok {
					col[n] = col[queue[0]] + 1
					queue = append(queue, n)
				}
			}
		}
	}
	bfs(initial, 0)
	for len(col) < len(states) {
		start, at := "", math.MaxInt
		for _, s := range states {
			if _, ok := col[s.Name]; ok {
				continue
			}
			c := reachedAt(s.Name, col, bundles)
			if start == "" || c < at {
				start, at = s.Name, c
			}
		}
		if at == math.MaxInt {
			at = 0 // not reachable at all: a column of its own at the left
		}
		bfs(start, at)
	}
	return col
}

// reachedAt is one past the column of the nearest placed source of a
// bundle into name, or MaxInt.
func reachedAt(name string, col map[string]int, bundles []ChartBundle) int {
	at := math.MaxInt
	for _, b := range bundles {
		if b.To != name {
			continue
		}
		for _, f := range b.From {
			if c, ok := col[f]; ok && c+1 < at {
				at = c + 1
			}
		}
	}
	return at
}

// cell is a state's place on the grid.
type cell struct{ col, row int }

// columnGap is the space between columns: wide enough for the widest
// label, within bounds.
func columnGap(edges []ChartEdge) float64 {
	gap := colGapMin
	for _, e := range edges {
		w, _ := labelSize(labelLines(e.Triggers))
		gap = max(gap, w+28)
	}
	return min(gap, colGapMax)
}

func stateWidth(s ChartState) float64 {
	w := float64(len(s.Name)) * nameCharW
	for _, e := range s.Entry {
		w = max(w, float64(len("entry / "+e))*smallCharW)
	}
	return max(w+2*nodePadX, minNodeW)
}

func labelSize(lines []labelLine) (w, h float64) {
	for _, l := range lines {
		w = max(w, float64(len(l.text))*smallCharW)
	}
	return w + 2*labelPadX, float64(len(lines))*lineH + 2*labelPadY
}

// placer searches the cells of a chart's states. What the search asks
// of every candidate is worked out once here.
type placer struct {
	states  []ChartState // Col set by columns
	initial int
	gap     float64
	widths  []float64 // of each state's box
	arrows  []arrow   // drawn edges, one per pair of states
	sources [][]bool  // per bundle: which states it leads from
	inBand  []bool    // see band
	ncols   int
}

// arrow is an edge as the search sees it: its ends and its label's size.
type arrow struct {
	a, b int
	w, h float64
}

func newPlacer(states []ChartState, edges []ChartEdge, bundles []ChartBundle, initial string) *placer {
	p := &placer{states: states, gap: columnGap(edges)}
	at := map[string]int{}
	for i, s := range states {
		at[s.Name] = i
		p.widths = append(p.widths, stateWidth(s))
		p.ncols = max(p.ncols, s.Col+1)
	}
	p.initial = at[initial]
	for _, e := range edges {
		a, b := at[e.From], at[e.To]
		if a == b || slices.ContainsFunc(p.arrows, func(o arrow) bool { return o.a == b && o.b == a }) {
			continue // a self loop, or the twin of an arrow already there
		}
		w, h := labelSize(labelLines(e.Triggers))
		p.arrows = append(p.arrows, arrow{a, b, w, h})
	}
	for _, b := range bundles {
		src := make([]bool, len(states))
		for _, f := range b.From {
			src[at[f]] = true
		}
		p.sources = append(p.sources, src)
	}
	p.inBand = p.band()
	return p
}

// boxes turns cells into boxes: columns as wide as their widest state,
// rows of equal height.
func (p *placer) boxes(cells []cell) []Rect {
	width := make([]float64, p.ncols)
	for i, c := range cells {
		width[c.col] = max(width[c.col], p.widths[i])
	}
	left := make([]float64, p.ncols)
	for i := 1; i < p.ncols; i++ {
		left[i] = left[i-1] + width[i-1] + p.gap
	}
	out := make([]Rect, len(cells))
	for i, c := range cells {
		w := p.widths[i]
		out[i] = Rect{left[c.col] + (width[c.col]-w)/2, float64(c.row) * (nodeH + rowGap), w, nodeH}
	}
	return out
}

// best tries every placement, up to searchLimit of them, and keeps the
// cheapest; ties go to the first tried, so the result is deterministic.
// A bundle's sources keep their column and take distinct rows, as many
// as the fullest column has or one more (a spare row can untangle
// arrows); the other states, when there is a bundle, share a band row
// above or below those, each in a column of its own.
func (p *placer) best() []cell {
	fullest := 0
	perCol := map[int]int{}
	for i, s := range p.states {
		if !p.inBand[i] {
			perCol[s.Col]++
			fullest = max(fullest, perCol[s.Col])
		}
	}
	outside := slices.Contains(p.inBand, true)
	var best []cell
	bestCost := math.Inf(1)
	budget := searchLimit
	for nrows := fullest; nrows <= fullest+1; nrows++ {
		for _, above := range bandSides(outside) {
			cands := p.candidates(nrows, above)
			extra := extraRowCost * float64(nrows-fullest)
			enumerate(cands, &budget, func(cells []cell) {
				if c := extra + p.cost(cells, bestCost-extra); c < bestCost {
					best, bestCost = slices.Clone(cells), c
				}
			})
		}
	}
	return best
}

// band marks the states that are no bundle's source, to be kept out of
// the bundles' boxes; none when there is no bundle, when every state is
// one's source, or when there are more of them than a row has columns.
func (p *placer) band() []bool {
	band := make([]bool, len(p.states))
	n := 0
	for i := range p.states {
		band[i] = len(p.sources) > 0 && !slices.ContainsFunc(p.sources, func(src []bool) bool { return src[i] })
		if band[i] {
			n++
		}
	}
	if n == len(p.states) || n > p.ncols {
		clear(band)
	}
	return band
}

// bandSides are the sides the band row is tried on: below, then above.
func bandSides(outside bool) []bool {
	if outside {
		return []bool{false, true}
	}
	return []bool{false}
}

// candidates lists the cells each state may take: its column's rows, or
// any column of the band row.
func (p *placer) candidates(nrows int, above bool) [][]cell {
	off, bandRow := 0, nrows
	if above {
		off, bandRow = 1, 0
	}
	out := make([][]cell, len(p.states))
	for i, s := range p.states {
		if p.inBand[i] {
			for c := range p.ncols {
				out[i] = append(out[i], cell{c, bandRow})
			}
			continue
		}
		for r := range nrows {
			out[i] = append(out[i], cell{s.Col, r + off})
		}
	}
	return out
}

// enumerate calls try with every choice of one candidate per state that
// puts no two states in one cell, until the budget is spent.
func enumerate(cands [][]cell, budget *int, try func([]cell)) {
	cells := make([]cell, len(cands))
	used := map[cell]bool{}
	var place func(i int)
	place = func(i int) {
		if *budget <= 0 {
			return
		}
		if i == len(cands) {
			*budget--
			try(cells)
			return
		}
		for _, c := range cands[i] {
			if !used[c] {
				used[c] = true
				cells[i] = c
				place(i + 1)
				used[c] = false
			}
		}
	}
	place(0)
}

// extraRowCost is what a row beyond the fullest column's costs: taken
// only when it saves more than a crossing.
const extraRowCost = 12

// cost scores a placement with straight arrows between box centres:
// states caught inside a bundle's box that are not its sources, vertical
// detours, arrows through a box, labels on a box or on each other, and
// crossings. It stops counting once it reaches bound: such a placement
// loses anyway.
func (p *placer) cost(cells []cell, bound float64) float64 {
	boxes := p.boxes(cells)
	cost := 0.5 * float64(cells[p.initial].row)
	for _, src := range p.sources {
		cost += 50 * float64(caught(src, boxes))
	}
	type seg struct {
		a, b  int
		p, q  point
		label Rect
	}
	segs := make([]seg, 0, len(p.arrows))
	for _, e := range p.arrows {
		if cost >= bound {
			return cost
		}
		pa, pb := boxes[e.a].center(), boxes[e.b].center()
		label := rectAround(pa.lerp(pb, 0.5), e.w, e.h)
		segs = append(segs, seg{e.a, e.b, pa, pb, label})
		cost += math.Abs(float64(cells[e.a].row - cells[e.b].row))
		for i, r := range boxes {
			if i != e.a && i != e.b && segmentHitsRect(pa, pb, r.inflate(8)) {
				cost += 12
			}
			if label.overlaps(r.inflate(4)) {
				cost += 6
			}
		}
	}
	for i, s := range segs {
		if cost >= bound {
			return cost
		}
		for _, t := range segs[i+1:] {
			shared := s.a == t.a || s.a == t.b || s.b == t.a || s.b == t.b
			if !shared && segmentsCross(s.p, s.q, t.p, t.q) {
				cost += 10
			}
			if s.label.overlaps(t.label) {
				cost += 6
			}
		}
	}
	return cost
}

// caught counts the states inside the box around a bundle's sources src
// that are not among them.
func caught(src []bool, boxes []Rect) int {
	var box Rect
	first := true
	for i, in := range src {
		if in && first {
			box, first = boxes[i], false
		} else if in {
			box = box.union(boxes[i])
		}
	}
	box = box.inflate(bundlePad)
	n := 0
	for i, in := range src {
		if !in && box.overlaps(boxes[i]) {
			n++
		}
	}
	return n
}

// bundleBox is the box around a bundle's sources.
func bundleBox(b ChartBundle, at map[string]int, boxes []Rect) Rect {
	var box Rect
	for i, f := range b.From {
		if i == 0 {
			box = boxes[at[f]]
		} else {
			box = box.union(boxes[at[f]])
		}
	}
	return box.inflate(bundlePad)
}
