package main

import (
	"math"
	"slices"
	"time"
)

// figures summarise a cell: each is the median over its repetitions, which
// keeps one noisy repetition on a shared machine from setting the number.
type figures struct {
	opsPerSec float64
	// opsMin and opsMax are the slowest and fastest repetition: the noise.
	opsMin, opsMax float64
	p50, p99       time.Duration
	// serverPerOp is the redis-servers' CPU time per operation.
	serverPerOp time.Duration
	// Contended cells only.
	jain             float64 // Jain's fairness index over per-worker wins: 1 is perfectly even, 1/n is one winner
	minWins, maxWins float64 // per worker, per repetition
	attemptsPerWin   float64
}

func summarize(samples []sample) figures {
	var ops, p50, p99, srv, jains, mins, maxs, apw []float64
	for _, s := range samples {
		lat := slices.Clone(s.lat)
		slices.Sort(lat)
		ops = append(ops, float64(len(lat))/s.elapsed.Seconds())
		p50 = append(p50, float64(percentile(lat, 0.50)))
		p99 = append(p99, float64(percentile(lat, 0.99)))
		if len(lat) > 0 {
			srv = append(srv, float64(s.serverCPU)/float64(len(lat)))
		}
		jains = append(jains, jain(s.perWorker))
		mins = append(mins, float64(slices.Min(s.perWorker)))
		maxs = append(maxs, float64(slices.Max(s.perWorker)))
		if len(lat) > 0 {
			apw = append(apw, float64(s.attempts)/float64(len(lat)))
		}
	}
	return figures{
		opsPerSec:      median(ops),
		opsMin:         slices.Min(ops),
		opsMax:         slices.Max(ops),
		p50:            time.Duration(median(p50)),
		p99:            time.Duration(median(p99)),
		serverPerOp:    time.Duration(median(srv)),
		jain:           median(jains),
		minWins:        median(mins),
		maxWins:        median(maxs),
		attemptsPerWin: median(apw),
	}
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// jain is Jain's fairness index (Σx)² / (n·Σx²).
func jain(counts []int) float64 {
	var sum, sq float64
	for _, c := range counts {
		sum += float64(c)
		sq += float64(c) * float64(c)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * sq)
}
