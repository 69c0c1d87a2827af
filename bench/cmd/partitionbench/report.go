package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

// row is one line of the table (benchkit.WriteTable).
type row = benchkit.Row

func report(w io.Writer, o options, rows []row, took time.Duration) {
	fmt.Fprintf(w, "partitionbench: %d replicas per fleet, one redis-server, %d repetitions (%s in all); median and range over the repetitions, a ratio from each repetition's own pair\n\n",
		o.replicas, o.reps, took.Round(time.Second))
	benchkit.WriteTable(w, rows)
}

// summary describes a set of durations.
type summary struct {
	n        int
	p50, p99 time.Duration
}

func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return summary{n: len(s), p50: percentile(s, 50), p99: percentile(s, 99)}
}

// percentile is the nearest-rank percentile of sorted: the smallest sample
// with at least pct% of the samples at or below it (so with fewer than 100
// samples p99 is the maximum).
func percentile(sorted []time.Duration, pct int) time.Duration {
	rank := (pct*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func msF(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", msF(d)) }

func msList(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%.1f", msF(d)))
	}
	return "[" + strings.Join(parts, " ") + "] ms"
}
