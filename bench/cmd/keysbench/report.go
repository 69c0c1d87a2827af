package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

// row is one line of the table (benchkit.WriteTable).
type row = benchkit.Row

func report(w io.Writer, o options, rows []row, took time.Duration) {
	fmt.Fprintf(w, "keysbench: %d replicas per fleet, one redis-server per part, %d repetitions (%s in all); median and range over the repetitions, a ratio from each repetition's own pair\n\n",
		o.replicas, o.reps, took.Round(time.Second))
	fmt.Fprintf(w, "machine: %d CPUs, load average %.1f at the end (other work shares the cores)\n\n", runtime.NumCPU(), loadAverage())
	benchkit.WriteTable(w, rows)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
