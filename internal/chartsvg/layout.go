package chartsvg

import (
	"cmp"
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
)

// Layout lays the chart d describes out in layers, with no search: each
// state's place follows from the description by the rules below, so the
// picture is stable.
//
//   - Columns: a state's distance from the initial state over the drawn
//     arrows (breadth first; a state reached only through a bundle goes
//     one column right of its nearest source).
//   - Rows: column by column from the left, the states most tied to those
//     already placed go first, each to the free row at the weighted median
//     of its placed neighbours' rows (the nearest free one when taken).
//     Two states joined by many arrows line up, so their arrows run
//     straight.
//   - States that are no bundle's source (where a bundle leads, STOP's
//     cleanup, and what follows it) share a row of their own below the
//     others, so no bundle's box can catch them, each in the free column
//     at the weighted median of its neighbours' columns. A bundle's target
//     takes a column with nothing right above it, so the bundle's arrow
//     runs straight down through an empty cell.
//
// Then the arrows are routed around the boxes and each other (route).
func Layout(d machine.Description) Chart {
	edges, bundles, ignored := classify(d)
	c := Chart{Initial: d.Initial, Edges: edges, Bundles: bundles, Ignored: ignored}
	for _, s := range d.States {
		c.States = append(c.States, ChartState{Name: s.Name, Entry: s.Entry})
	}
	g := newGrid(c.States, edges, bundles)
	col := columns(c.States, d.Initial, edges, bundles)
	for i, s := range c.States {
		if !g.band[i] {
			g.cells[i].col = col[s.Name]
		}
	}
	g.placeRows()
	g.placeBand(bundles)
	boxes := g.boxes(columnGap(edges))
	for i := range c.States {
		c.States[i].Col, c.States[i].Row, c.States[i].Box = g.cells[i].col, g.cells[i].row, boxes[i]
	}
	route(&c)
	c.normalize()
	return c
}

// cell is a state's place on the grid.
type cell struct{ col, row int }

// grid is the chart's states on their way to a cell each.
type grid struct {
	states []ChartState
	at     map[string]int
	tie    [][]int // tie[a][b]: the triggers on the arrows between a and b
	band   []bool  // see band
	target []bool  // a bundle leads to it
	cells  []cell
	placed []bool
	nrows  int // rows above the band
	ncols  int
}

func newGrid(states []ChartState, edges []ChartEdge, bundles []ChartBundle) *grid {
	n := len(states)
	g := &grid{states: states, at: map[string]int{}, cells: make([]cell, n), placed: make([]bool, n), target: make([]bool, n)}
	for i, s := range states {
		g.at[s.Name] = i
		g.tie = append(g.tie, make([]int, n))
	}
	for _, e := range edges {
		a, b := g.at[e.From], g.at[e.To]
		if a != b {
			g.tie[a][b] += len(e.Triggers)
			g.tie[b][a] += len(e.Triggers)
		}
	}
	sources := make([]bool, n)
	for _, b := range bundles {
		g.target[g.at[b.To]] = true
		for _, f := range b.From {
			sources[g.at[f]] = true
		}
	}
	g.band = band(sources, len(bundles) > 0)
	return g
}

// band marks the states that are no bundle's source, to be kept out of
// the bundles' boxes; none when there is no bundle or when every state is
// one's source.
func band(sources []bool, bundled bool) []bool {
	out := make([]bool, len(sources))
	n := 0
	for i, src := range sources {
		out[i] = bundled && !src
		if out[i] {
			n++
		}
	}
	if n == len(sources) {
		clear(out)
	}
	return out
}

// placeRows gives the states above the band their rows; see Layout.
func (g *grid) placeRows() {
	perCol := map[int][]int{}
	for i := range g.states {
		if !g.band[i] {
			c := g.cells[i].col
			perCol[c] = append(perCol[c], i)
			g.nrows = max(g.nrows, len(perCol[c]))
			g.ncols = max(g.ncols, c+1)
		}
	}
	for c := range g.ncols {
		members := perCol[c]
		slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(g.pull(b), g.pull(a)) })
		used := map[int]bool{}
		for _, i := range members {
			want := g.median(i, func(c cell) int { return c.row })
			r := nearestFree(want, g.nrows, func(r int) bool { return !used[r] })
			used[r] = true
			g.cells[i].row, g.placed[i] = r, true
		}
	}
}

// placeBand gives the band's states their cells in the row below the
// others, bundles' targets first; see Layout. With more band states than
// columns, the band grows to the right.
func (g *grid) placeBand(bundles []ChartBundle) {
	var members []int
	for i := range g.states {
		if g.band[i] {
			members = append(members, i)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		if g.target[a] != g.target[b] {
			if g.target[a] {
				return -1
			}
			return 1
		}
		return 0
	})
	above := map[int]bool{} // columns whose last row above the band is taken
	for i := range g.states {
		if !g.band[i] && g.cells[i].row == g.nrows-1 {
			above[g.cells[i].col] = true
		}
	}
	width := max(g.ncols, len(members))
	used := map[int]bool{}
	for _, i := range members {
		want := g.median(i, func(c cell) int { return c.col })
		free := func(c int) bool { return !used[c] && !(g.target[i] && above[c]) }
		if !anyFree(width, free) {
			free = func(c int) bool { return !used[c] }
		}
		c := nearestFree(want, width, free)
		used[c] = true
		g.cells[i], g.placed[i] = cell{c, g.nrows}, true
		g.ncols = max(g.ncols, c+1)
	}
	if len(members) > 0 {
		g.nrows++
	}
}

func anyFree(n int, free func(int) bool) bool {
	for c := range n {
		if free(c) {
			return true
		}
	}
	return false
}

// pull is how many triggers tie state i to the states placed so far.
func (g *grid) pull(i int) int {
	n := 0
	for j, t := range g.tie[i] {
		if g.placed[j] {
			n += t
		}
	}
	return n
}

// median is the weighted lower median of coord over the placed states tied
// to i, each weighing its tie; 0 when none is placed.
func (g *grid) median(i int, coord func(cell) int) int {
	type vote struct{ at, weight int }
	var votes []vote
	total := 0
	for j, t := range g.tie[i] {
		if t > 0 && g.placed[j] {
			votes = append(votes, vote{coord(g.cells[j]), t})
			total += t
		}
	}
	slices.SortStableFunc(votes, func(a, b vote) int { return cmp.Compare(a.at, b.at) })
	sum := 0
	for _, v := range votes {
		if sum += v.weight; 2*sum >= total {
			return v.at
		}
	}
	return 0
}

// nearestFree is the free index in [0, n) nearest to want, the lower one
// on a tie; want when none is free.
func nearestFree(want, n int, free func(int) bool) int {
	for d := 0; d < 2*n; d++ {
		for _, c := range []int{want - d, want + d} {
			if c >= 0 && c < n && free(c) {
				return c
			}
		}
	}
	return want
}

// boxes turns the cells into boxes: columns as wide as their widest
// state, gap apart; rows of equal height.
func (g *grid) boxes(gap float64) []Rect {
	width := make([]float64, g.ncols)
	for i, c := range g.cells {
		width[c.col] = max(width[c.col], stateWidth(g.states[i]))
	}
	left := make([]float64, g.ncols)
	for i := 1; i < g.ncols; i++ {
		left[i] = left[i-1] + width[i-1] + gap
	}
	out := make([]Rect, len(g.cells))
	for i, c := range g.cells {
		w := stateWidth(g.states[i])
		out[i] = Rect{left[c.col] + (width[c.col]-w)/2, float64(c.row) * (nodeH + rowGap), w, nodeH}
	}
	return out
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
