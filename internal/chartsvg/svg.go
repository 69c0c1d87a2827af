package chartsvg

import (
	"fmt"
	"html"
	"strings"
)

// The SVG carries its look as presentation attributes, so /chart.svg is
// readable on its own (a README, a browser tab); the page's stylesheet
// overrides them through the classes to mark the current state and the
// arrows just taken. It holds no <style> and no script, which the page's
// Content-Security-Policy would block anyway.
const (
	svgMono   = `ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', 'Liberation Mono', monospace`
	svgInk    = "#0f172a"
	svgMuted  = "#64748b"
	svgLine   = "#94a3b8"
	svgBorder = "#cbd5e1"
)

// SVG renders the laid-out chart. Elements carry data-state, data-from,
// data-to and data-trigger attributes for the page's script.
func (c Chart) SVG() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" class="chart" role="img" aria-labelledby="lw-chart-title" font-family="%s">`+"\n",
		num(c.Width), num(c.Height), num(c.Width), num(c.Height), esc(svgMono))
	b.WriteString(`<title id="lw-chart-title">lockworker state chart</title>` + "\n")
	b.WriteString(`<defs>`)
	for _, m := range []struct{ id, color string }{{"lw-arrow", svgLine}, {"lw-arrow-hot", "#2563eb"}} {
		fmt.Fprintf(&b, `<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,1 L10,5 L0,9 z" fill="%s"/></marker>`, m.id, m.color)
	}
	b.WriteString("</defs>\n")
	for _, bd := range c.Bundles {
		writeBundle(&b, bd)
	}
	fmt.Fprintf(&b, `<g class="start"><circle cx="%s" cy="%s" r="4.5" fill="%s"/><path d="%s" fill="none" stroke="%s" stroke-width="1.5" marker-end="url(#lw-arrow)"/></g>`+"\n",
		num(c.start.p0.x), num(c.start.p0.y), svgInk, c.Start, svgLine)
	for _, e := range c.Edges {
		writeEdge(&b, e)
	}
	for _, s := range c.States {
		writeState(&b, s)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func writeBundle(b *strings.Builder, bd ChartBundle) {
	fmt.Fprintf(b, `<g class="bundle" data-trigger="%s" data-to="%s" data-from="%s">`,
		esc(bd.Trigger), esc(bd.To), esc(strings.Join(bd.From, " ")))
	fmt.Fprintf(b, `<title>%s from %s</title>`, esc(bd.Trigger), esc(strings.Join(bd.From, ", ")))
	fmt.Fprintf(b, `<rect class="bundle-box" x="%s" y="%s" width="%s" height="%s" rx="14" fill="#f8fafc" stroke="%s" stroke-dasharray="5 4"/>`,
		num(bd.Box.X), num(bd.Box.Y), num(bd.Box.W), num(bd.Box.H), svgBorder)
	fmt.Fprintf(b, `<path class="edge-line" d="%s" fill="none" stroke="%s" stroke-width="1.5" marker-end="url(#lw-arrow)"/>`, bd.Path, svgLine)
	writeLabel(b, bd.Label, []labelLine{{text: bd.Trigger, trigger: bd.Trigger}})
	b.WriteString("</g>\n")
}

func writeEdge(b *strings.Builder, e ChartEdge) {
	fmt.Fprintf(b, `<g class="edge" data-from="%s" data-to="%s">`, esc(e.From), esc(e.To))
	fmt.Fprintf(b, `<path class="edge-line" d="%s" fill="none" stroke="%s" stroke-width="1.5" marker-end="url(#lw-arrow)"/>`, e.Path, svgLine)
	writeLabel(b, e.Label, labelLines(e.Triggers))
	b.WriteString("</g>\n")
}

func writeLabel(b *strings.Builder, r Rect, lines []labelLine) {
	fmt.Fprintf(b, `<g class="label"><rect class="label-bg" x="%s" y="%s" width="%s" height="%s" rx="4" fill="#ffffff" fill-opacity="0.92"/>`,
		num(r.X), num(r.Y), num(r.W), num(r.H))
	cx := r.X + r.W/2
	for i, l := range lines {
		y := r.Y + labelPadY + lineH*(float64(i)+0.5)
		class, color := "trigger", "#475569"
		if l.detail {
			class, color = "trigger-detail", "#94a3b8"
		}
		fmt.Fprintf(b, `<text class="%s" data-trigger="%s" x="%s" y="%s" font-size="10" fill="%s" text-anchor="middle" dominant-baseline="central">%s</text>`,
			class, esc(l.trigger), num(cx), num(y), color, esc(l.text))
	}
	b.WriteString("</g>")
}

func writeState(b *strings.Builder, s ChartState) {
	r := s.Box
	fmt.Fprintf(b, `<g class="state" data-state="%s">`, esc(s.Name))
	fmt.Fprintf(b, `<rect class="state-box" x="%s" y="%s" width="%s" height="%s" rx="10" fill="#ffffff" stroke="%s" stroke-width="1.25"/>`,
		num(r.X), num(r.Y), num(r.W), num(r.H), svgBorder)
	cx, cy := r.X+r.W/2, r.Y+r.H/2
	nameY := cy
	if len(s.Entry) > 0 {
		nameY = cy - 7
	}
	fmt.Fprintf(b, `<text class="state-name" x="%s" y="%s" font-size="12" font-weight="600" fill="%s" text-anchor="middle" dominant-baseline="central">%s</text>`,
		num(cx), num(nameY), svgInk, esc(s.Name))
	for i, e := range s.Entry {
		fmt.Fprintf(b, `<text class="state-entry" x="%s" y="%s" font-size="10" fill="%s" text-anchor="middle" dominant-baseline="central">entry / %s</text>`,
			num(cx), num(cy+9+float64(i)*lineH), svgMuted, esc(e))
	}
	b.WriteString("</g>\n")
}

func esc(s string) string { return html.EscapeString(s) }
