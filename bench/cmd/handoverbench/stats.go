package main

import (
	"slices"
	"time"
)

// summary describes a set of durations.
type summary struct {
	n                  int
	min, p50, p99, max time.Duration
}

func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return summary{n: len(s), min: s[0], p50: percentile(s, 50), p99: percentile(s, 99), max: s[len(s)-1]}
}

// percentile is the nearest-rank percentile of sorted: the smallest sample
// with at least pct% of the samples at or below it. It never interpolates,
// so with fewer than 100 samples p99 is the maximum. Integer arithmetic
// keeps 0.99*n from rounding up past a whole rank.
func percentile(sorted []time.Duration, pct int) time.Duration {
	rank := (pct*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
