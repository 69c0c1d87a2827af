// Command jobsbench turns the jobs benchmarks' output into the table that
// `make bench` prints: no-op jobs per second one job per round trip
// (BenchmarkProcessNoop) and with group commit (BenchmarkProcessNoopBatched),
// raw Redis round trips per second on the same client (BenchmarkRedisRoundTrip),
// the floor of one job per round trip (BenchmarkStepFloor: the least a
// fenced, ordered commit can do, with the next claim behind it), and the
// three ratios, each as the median and range over the runs; then the job
// handlers beside each other: no-op jobs posted by the http handler to a
// local server answering 204 (BenchmarkProcessNoopHTTP, ...HTTPBatched)
// and run as `true` by the exec handler (BenchmarkProcessNoopExec,
// ...ExecBatched), one job per round trip and with group commit, with
// http ÷ exec for each. Each ratio pairs run i of one benchmark with run
// i of the other, so it compares figures from one `go test` invocation.
//
//	go test -run '^$' -bench 'ProcessNoop|RedisRoundTrip|StepFloor' -count 5 ./internal/jobs | (cd bench && go run ./cmd/jobsbench)
//
// The benchmark output is copied to stderr as it is read.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	if err := run(os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "jobsbench:", err)
		os.Exit(1)
	}
}

// line matches a benchmark result line with its custom metric, e.g.
// "BenchmarkProcessNoop-2   5276   214136 ns/op   4670 jobs/s".
var line = regexp.MustCompile(`^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns/op\s+([\d.e+]+) (jobs/s|rtt/s)`)

// The benchmarks the table is made of.
const (
	noop    = "ProcessNoop"
	batched = "ProcessNoopBatched"
	rtt     = "RedisRoundTrip"
	floor   = "StepFloor"

	httpNoop    = "ProcessNoopHTTP"
	httpBatched = "ProcessNoopHTTPBatched"
	execNoop    = "ProcessNoopExec"
	execBatched = "ProcessNoopExecBatched"
)

func run(in io.Reader, out, echo io.Writer) error {
	runs, err := parse(io.TeeReader(in, echo))
	if err != nil {
		return err
	}
	for _, name := range []string{noop, batched, rtt, floor, httpNoop, httpBatched, execNoop, execBatched} {
		if len(runs[name]) == 0 {
			return fmt.Errorf("no result of Benchmark%s in the input", name)
		}
	}
	return write(out, runs)
}

// parse collects each benchmark's metric per run, in run order.
func parse(in io.Reader) (map[string][]float64, error) {
	runs := map[string][]float64{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", sc.Text(), err)
		}
		runs[m[1]] = append(runs[m[1]], v)
	}
	return runs, sc.Err()
}

// ratios divides run i of a by run i of b, over the runs both have.
func ratios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, 0, n)
	for i := range n {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// summary is a median and a range.
type summary struct{ median, lo, hi float64 }

func summarize(xs []float64) (summary, error) {
	if len(xs) == 0 {
		return summary{}, errors.New("no values")
	}
	s := slices.Sorted(slices.Values(xs))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{median: m, lo: s[0], hi: s[len(s)-1]}, nil
}

func write(w io.Writer, runs map[string][]float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintf(tw, "| %s |\n", strings.Join(cells, "\t| ")) }
	row("jobs (no-op handler, one leader)", "median", "min–max", "runs")
	row("---", "--:", "--:", "--:")
	for _, r := range []struct {
		what   string
		xs     []float64
		format string
	}{
		{"jobs/s, one job per round trip (JOB_BATCH=1)", runs[noop], "%.0f"},
		{"jobs/s, group commit (JOB_BATCH default)", runs[batched], "%.0f"},
		{"Redis round trips/s (PING, same client)", runs[rtt], "%.0f"},
		{"jobs/s, floor: least fenced commit + claim on the stream", runs[floor], "%.0f"},
		{"one job per round trip ÷ round trips", ratios(runs[noop], runs[rtt]), "%.2f×"},
		{"floor ÷ round trips", ratios(runs[floor], runs[rtt]), "%.2f×"},
		{"one job per round trip ÷ floor", ratios(runs[noop], runs[floor]), "%.2f×"},
		{"group commit ÷ round trips", ratios(runs[batched], runs[rtt]), "%.2f×"},
		{"jobs/s, http handler (local server answering 204), one job per round trip", runs[httpNoop], "%.0f"},
		{"jobs/s, http handler, group commit", runs[httpBatched], "%.0f"},
		{"jobs/s, exec handler (`true`), one job per round trip", runs[execNoop], "%.1f"},
		{"jobs/s, exec handler, group commit", runs[execBatched], "%.1f"},
		{"http ÷ exec, one job per round trip", ratios(runs[httpNoop], runs[execNoop]), "%.0f×"},
		{"http ÷ exec, group commit", ratios(runs[httpBatched], runs[execBatched]), "%.0f×"},
	} {
		s, err := summarize(r.xs)
		if err != nil {
			return fmt.Errorf("%s: %w", r.what, err)
		}
		f := func(v float64) string { return fmt.Sprintf(r.format, v) }
		row(r.what, f(s.median), f(s.lo)+"–"+f(s.hi), strconv.Itoa(len(r.xs)))
	}
	return tw.Flush()
}
