package chartsvg

import (
	"fmt"
	"html"
	"slices"
	"strings"
)

// The SVG's look is in presentation attributes, so /chart.svg reads on its
// own; the page's stylesheet overrides them through the classes. No
// <style> and no script: the page's Content-Security-Policy blocks both.
const (
	svgHead = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %[1]s %[2]s" width="%[1]s" height="%[2]s" class="chart" role="img" aria-labelledby="lw-chart-title" font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, &#39;DejaVu Sans Mono&#39;, &#39;Liberation Mono&#39;, monospace">
<title id="lw-chart-title">lockworker state chart</title>
<defs><marker id="lw-arrow" ` + svgMarker + `#94a3b8"/></marker><marker id="lw-arrow-hot" ` + svgMarker + `#2563eb"/></marker></defs>
`
	svgMarker = `viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,1 L10,5 L0,9 z" fill="`
	svgLine   = `fill="none" stroke="#94a3b8" stroke-width="1.5" marker-end="url(#lw-arrow)"`
)

// SVG renders the placed chart. Elements carry data-state, data-from,
// data-to and data-trigger attributes for the page's script.
func (c Chart) SVG() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, svgHead, num(c.Width), num(c.Height))
	for _, a := range slices.Concat(c.Bundles, c.Edges) { // bundles first: their boxes lie beneath
		t, from := a.Transitions[0], []string{}
		for _, u := range a.Transitions {
			from = append(from, u.From)
		}
		if a.Box == (Rect{}) {
			fmt.Fprintf(&b, `<g class="edge" data-from="%s" data-to="%s">`, esc(t.From), esc(t.To))
		} else {
			fmt.Fprintf(&b, `<g class="bundle" data-trigger="%s" data-to="%s" data-from="%s"><title>%[1]s from %[4]s</title><rect class="bundle-box" %s rx="14" fill="#f8fafc" stroke="#cbd5e1" stroke-dasharray="5 4"/>`,
				esc(t.Trigger), esc(t.To), esc(strings.Join(from, " ")), esc(strings.Join(from, ", ")), box(a.Box))
		}
		writeArrow(&b, a)
	}
	fmt.Fprintf(&b, `<g class="start"><circle cx="%s" cy="%s" r="4.5" fill="#0f172a"/><path d="%s" %s/></g>`+"\n", num(start[0].x), num(start[0].y), path(start), svgLine)
	for _, s := range c.Description.States {
		r := c.Boxes[s.Name]
		fmt.Fprintf(&b, `<g class="state" data-state="%s"><rect class="state-box" %s rx="10" fill="#ffffff" stroke="#cbd5e1" stroke-width="1.25"/>`, esc(s.Name), box(r))
		x, y := r.X+r.W/2, r.Y+r.H/2
		if len(s.Entry) > 0 {
			y -= 7
		}
		text(&b, `class="state-name"`, x, y, `font-size="12" font-weight="600" fill="#0f172a"`, s.Name)
		for i, e := range s.Entry {
			text(&b, `class="state-entry"`, x, y+16+float64(i)*lineH, `font-size="10" fill="#64748b"`, "entry / "+e)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// writeArrow writes a's line and label and closes the group it is in.
func writeArrow(b *strings.Builder, a Arrow) {
	fmt.Fprintf(b, `<path class="edge-line" d="%s" %s/><g class="label"><rect class="label-bg" %s rx="4" fill="#ffffff" fill-opacity="0.92"/>`, a.Path, svgLine, box(a.Label))
	for i, l := range a.lines() {
		class, look := "trigger", `font-size="10" fill="#475569"`
		if l.detail {
			class, look = "trigger-detail", `font-size="10" fill="#94a3b8"`
		}
		y := a.Label.Y + labelPadY + lineH*(float64(i)+0.5)
		text(b, fmt.Sprintf(`class="%s" data-trigger="%s"`, class, esc(l.trigger)), a.Label.X+a.Label.W/2, y, look, l.text)
	}
	b.WriteString("</g></g>\n")
}

func text(b *strings.Builder, attrs string, x, y float64, look, s string) {
	fmt.Fprintf(b, `<text %s x="%s" y="%s" %s text-anchor="middle" dominant-baseline="central">%s</text>`, attrs, num(x), num(y), look, esc(s))
}

func box(r Rect) string {
	return fmt.Sprintf(`x="%s" y="%s" width="%s" height="%s"`, num(r.X), num(r.Y), num(r.W), num(r.H))
}

func esc(s string) string { return html.EscapeString(s) }
