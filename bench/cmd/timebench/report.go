package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table: a figure of each repetition.
type row struct {
	what   string
	vals   []float64
	unit   string
	target string
	ok     func(float64) bool // the target, for one repetition's figure; nil: none
	note   string
}

func report(w io.Writer, o options, rows []row, took time.Duration) {
	fmt.Fprintf(w, "timebench: %d replicas, PARTITIONS=%d, one Redis topology per part, %d repetitions (%s in all); median and range over the repetitions\n\n",
		o.replicas, o.parts, o.reps, took.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tmedian\tmin–max\truns\ttarget\tmet\tnote")
	for _, r := range rows {
		met := ""
		if r.ok != nil {
			n := 0
			for _, v := range r.vals {
				if r.ok(v) {
					n++
				}
			}
			met = fmt.Sprintf("%d of %d", n, len(r.vals))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s–%s\t%d\t%s\t%s\t%s\n", r.what,
			num(median(r.vals), r.unit), num(slices.Min(r.vals), ""), num(slices.Max(r.vals), r.unit),
			len(r.vals), r.target, met, r.note)
	}
	tw.Flush()
}

// num formats v with its unit, with as many digits as its size deserves.
func num(v float64, unit string) string {
	var s string
	switch {
	case v == float64(int64(v)) && v < 1000 && v > -1000:
		s = fmt.Sprintf("%d", int64(v))
	case v >= 1000:
		s = commas(fmt.Sprintf("%.0f", v))
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
	case "/s", "x":
		return s + unit
	}
	return s + " " + unit
}

func commas(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile is the nearest-rank percentile of sorted: the smallest sample
// with at least pct% of the samples at or below it.
func percentile(sorted []time.Duration, pct int) time.Duration {
	rank := (pct*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func msF(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msList(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.0f", msF(d)))
	}
	return "[" + strings.Join(parts, " ") + "] ms"
}
