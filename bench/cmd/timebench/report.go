package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

// row is one line of the table (benchkit.WriteTable).
type row = benchkit.Row

func report(w io.Writer, o options, rows []row, took time.Duration) {
	fmt.Fprintf(w, "timebench: %d replicas, PARTITIONS=%d, one Redis topology per part, %d repetitions (%s in all); median and range over the repetitions\n\n",
		o.replicas, o.parts, o.reps, took.Round(time.Second))
	benchkit.WriteTable(w, rows)
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
