package benchkit

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one line of a bench's table: a figure of each repetition.
type Row struct {
	What   string
	Vals   []float64
	Unit   string
	Target string
	OK     func(float64) bool // the target, for one repetition's figure; nil: none
	Note   string
}

// WriteTable prints rows with their median, range, runs and how many
// repetitions met the target.
func WriteTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tmedian\tmin–max\truns\ttarget\tmet\tnote")
	for _, r := range rows {
		met := ""
		if r.OK != nil {
			n := 0
			for _, v := range r.Vals {
				if r.OK(v) {
					n++
				}
			}
			met = fmt.Sprintf("%d of %d", n, len(r.Vals))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s–%s\t%d\t%s\t%s\t%s\n", r.What,
			Num(Median(r.Vals), r.Unit), Num(slices.Min(r.Vals), ""), Num(slices.Max(r.Vals), r.Unit),
			len(r.Vals), r.Target, met, r.Note)
	}
	tw.Flush()
}

// Num formats v with its unit, with as many digits as its size deserves.
func Num(v float64, unit string) string {
	var s string
	switch {
	case v == float64(int64(v)) && v < 1000 && v > -1000:
		s = fmt.Sprintf("%d", int64(v))
	case v >= 1000:
		s = Commas(fmt.Sprintf("%.0f", v))
	case v >= 100 || v <= -100:
		s = fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.2f", v)
	}
	switch unit {
	case "":
		return s
	case "x", "/s":
		return s + unit
	}
	return s + " " + unit
}

// Commas puts thousands separators into a formatted integer.
func Commas(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Median of xs (not empty).
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Divide is each of xs divided by by.
func Divide(xs []float64, by float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / by
	}
	return out
}
