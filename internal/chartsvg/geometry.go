package chartsvg

import (
	"fmt"
	"math"
)

// The plane the chart is laid out in: SVG user units, Y down.

type point struct{ x, y float64 }

func (p point) add(q point) point             { return point{p.x + q.x, p.y + q.y} }
func (p point) sub(q point) point             { return point{p.x - q.x, p.y - q.y} }
func (p point) scale(k float64) point         { return point{p.x * k, p.y * k} }
func (p point) lerp(q point, t float64) point { return p.add(q.sub(p).scale(t)) }

func (r Rect) center() point { return point{r.X + r.W/2, r.Y + r.H/2} }

func (r Rect) inflate(d float64) Rect { return Rect{r.X - d, r.Y - d, r.W + 2*d, r.H + 2*d} }

func (r Rect) contains(p point) bool {
	return p.x >= r.X && p.x <= r.X+r.W && p.y >= r.Y && p.y <= r.Y+r.H
}

func (r Rect) overlaps(o Rect) bool {
	return r.X < o.X+o.W && o.X < r.X+r.W && r.Y < o.Y+o.H && o.Y < r.Y+r.H
}

func (r Rect) union(o Rect) Rect {
	x0, y0 := math.Min(r.X, o.X), math.Min(r.Y, o.Y)
	x1, y1 := math.Max(r.X+r.W, o.X+o.W), math.Max(r.Y+r.H, o.Y+o.H)
	return Rect{x0, y0, x1 - x0, y1 - y0}
}

func (r Rect) shift(d point) Rect { return Rect{r.X + d.x, r.Y + d.y, r.W, r.H} }

// rectAround is the w×h box centred on c.
func rectAround(c point, w, h float64) Rect { return Rect{c.x - w/2, c.y - h/2, w, h} }

// segmentsCross reports whether segments ab and cd cross at a point inside
// both (touching ends do not count).
func segmentsCross(a, b, c, d point) bool {
	cross := func(o, p, q point) float64 { return (p.x-o.x)*(q.y-o.y) - (p.y-o.y)*(q.x-o.x) }
	d1, d2 := cross(c, d, a), cross(c, d, b)
	d3, d4 := cross(a, b, c), cross(a, b, d)
	return d1*d2 < 0 && d3*d4 < 0
}

// segmentHitsRect reports whether segment ab passes through r.
func segmentHitsRect(a, b point, r Rect) bool {
	if r.contains(a) || r.contains(b) {
		return true
	}
	tl, tr := point{r.X, r.Y}, point{r.X + r.W, r.Y}
	bl, br := point{r.X, r.Y + r.H}, point{r.X + r.W, r.Y + r.H}
	return segmentsCross(a, b, tl, tr) || segmentsCross(a, b, tr, br) ||
		segmentsCross(a, b, br, bl) || segmentsCross(a, b, bl, tl)
}

// curve is a cubic Bézier; straight lines and quadratic bends are drawn as
// cubics too, so every edge is one path command.
type curve struct{ p0, c1, c2, p3 point }

// quad is the quadratic Bézier p0, c, p2 as a cubic.
func quad(p0, c, p2 point) curve {
	return curve{p0, p0.lerp(c, 2.0/3), p2.lerp(c, 2.0/3), p2}
}

func (c curve) at(t float64) point {
	u := 1 - t
	return c.p0.scale(u * u * u).add(c.c1.scale(3 * u * u * t)).add(c.c2.scale(3 * u * t * t)).add(c.p3.scale(t * t * t))
}

// sub is the piece of c between t0 and t1 (de Casteljau).
func (c curve) sub(t0, t1 float64) curve {
	split := func(c curve, t float64) (curve, curve) {
		p01, p12, p23 := c.p0.lerp(c.c1, t), c.c1.lerp(c.c2, t), c.c2.lerp(c.p3, t)
		a, b := p01.lerp(p12, t), p12.lerp(p23, t)
		m := a.lerp(b, t)
		return curve{c.p0, p01, a, m}, curve{m, b, p23, c.p3}
	}
	_, right := split(c, t0)
	left, _ := split(right, (t1-t0)/(1-t0))
	return left
}

// clip cuts c where it leaves the box it starts in and where it enters the
// box it ends in, so an arrow touches the boxes' borders.
func (c curve) clip(from, to Rect) curve {
	t0 := c.boundary(from, 0, 0.5)
	t1 := c.boundary(to, 1, 0.5)
	if t1 <= t0 {
		return c
	}
	return c.sub(t0, t1)
}

// boundary bisects between inside (where c is in r) and outside for the
// point where c crosses r's border.
func (c curve) boundary(r Rect, inside, outside float64) float64 {
	if !r.contains(c.at(inside)) || r.contains(c.at(outside)) {
		return inside
	}
	for range 30 {
		m := (inside + outside) / 2
		if r.contains(c.at(m)) {
			inside = m
		} else {
			outside = m
		}
	}
	return outside
}

// samples are n+1 points along c.
func (c curve) samples(n int) []point {
	out := make([]point, n+1)
	for i := range out {
		out[i] = c.at(float64(i) / float64(n))
	}
	return out
}

func (c curve) shift(d point) curve {
	return curve{c.p0.add(d), c.c1.add(d), c.c2.add(d), c.p3.add(d)}
}

// bounds is the box of c's control polygon, which holds the curve.
func (c curve) bounds() Rect {
	r := Rect{c.p0.x, c.p0.y, 0, 0}
	for _, p := range []point{c.c1, c.c2, c.p3} {
		r = r.union(Rect{p.x, p.y, 0, 0})
	}
	return r
}

// path is c as SVG path data, to a tenth of a unit.
func (c curve) path() string {
	return fmt.Sprintf("M%s C%s %s %s", c.p0.fmt(), c.c1.fmt(), c.c2.fmt(), c.p3.fmt())
}

func (p point) fmt() string { return num(p.x) + "," + num(p.y) }

// num prints v to a tenth, without a trailing ".0", so the golden files
// do not change with float noise.
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func round(r Rect) Rect {
	f := func(v float64) float64 { return math.Round(v*10) / 10 }
	return Rect{f(r.X), f(r.Y), f(r.W), f(r.H)}
}
