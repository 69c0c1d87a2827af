package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/lockworker/lockworker/internal/jobs
BenchmarkProcessNoop-2          	    5000	    200000 ns/op	      5000 jobs/s
BenchmarkProcessNoop-2          	    6000	    166666 ns/op	      6000 jobs/s
BenchmarkProcessNoop-2          	    4000	    250000 ns/op	      4000 jobs/s
BenchmarkProcessNoopBatched-2   	  100000	     10000 ns/op	    100000 jobs/s
BenchmarkProcessNoopBatched-2   	  120000	      8333 ns/op	    120000 jobs/s
BenchmarkProcessNoopBatched-2   	   80000	     12500 ns/op	     80000 jobs/s
BenchmarkRedisRoundTrip-2       	   10000	    100000 ns/op	     10000 rtt/s
BenchmarkRedisRoundTrip-2       	   20000	     50000 ns/op	     20000 rtt/s
BenchmarkRedisRoundTrip-2       	    8000	    125000 ns/op	      8000 rtt/s
BenchmarkStepFloor-2            	    8000	    125000 ns/op	      8000 jobs/s
BenchmarkStepFloor-2            	   16000	     62500 ns/op	     16000 jobs/s
BenchmarkStepFloor-2            	    4000	    250000 ns/op	      4000 jobs/s
BenchmarkProcessNoopHTTP-2          	    4000	    250000 ns/op	      4000 jobs/s
BenchmarkProcessNoopHTTP-2          	    3000	    333333 ns/op	      3000 jobs/s
BenchmarkProcessNoopHTTP-2          	    5000	    200000 ns/op	      5000 jobs/s
BenchmarkProcessNoopHTTPBatched-2   	    8000	    125000 ns/op	      8000 jobs/s
BenchmarkProcessNoopHTTPBatched-2   	    6000	    166666 ns/op	      6000 jobs/s
BenchmarkProcessNoopHTTPBatched-2   	    9000	    111111 ns/op	      9000 jobs/s
BenchmarkProcessNoopExec-2          	      20	  50000000 ns/op	        20.00 jobs/s
BenchmarkProcessNoopExec-2          	      25	  40000000 ns/op	        25.00 jobs/s
BenchmarkProcessNoopExec-2          	      10	 100000000 ns/op	        10.00 jobs/s
BenchmarkProcessNoopExecBatched-2   	      20	  50000000 ns/op	        20.00 jobs/s
BenchmarkProcessNoopExecBatched-2   	      30	  33333333 ns/op	        30.00 jobs/s
BenchmarkProcessNoopExecBatched-2   	      40	  25000000 ns/op	        40.00 jobs/s
PASS
`

func TestTable(t *testing.T) {
	var out, echo bytes.Buffer
	if err := run(strings.NewReader(sample), &out, &echo); err != nil {
		t.Fatal(err)
	}
	if echo.String() != sample {
		t.Fatal("the input was not copied through")
	}
	got := strings.Join(strings.Fields(out.String()), " ") // the padding aside
	for _, want := range []string{
		"| jobs/s, one job per round trip (JOB_BATCH=1) | 5000 | 4000–6000 | 3 |",
		"| Redis round trips/s (PING, same client) | 10000 | 8000–20000 | 3 |",
		// run by run: 0.50, 0.30, 0.50 and 10, 6, 10
		"| one job per round trip ÷ round trips | 0.50× | 0.30×–0.50× | 3 |",
		"| group commit ÷ round trips | 10.00× | 6.00×–10.00× | 3 |",
		// 0.80, 0.80, 0.50 and 0.625, 0.375, 1.00
		"| floor ÷ round trips | 0.80× | 0.50×–0.80× | 3 |",
		"| one job per round trip ÷ floor | 0.62× | 0.38×–1.00× | 3 |",
		"| jobs/s, http handler (local server answering 204), one job per round trip | 4000 | 3000–5000 | 3 |",
		"| jobs/s, exec handler (`true`), one job per round trip | 20.0 | 10.0–25.0 | 3 |",
		// 200, 120, 500 and 400, 200, 225
		"| http ÷ exec, one job per round trip | 200× | 120×–500× | 3 |",
		"| http ÷ exec, group commit | 225× | 200×–400× | 3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestMissingBenchmark(t *testing.T) {
	for _, name := range []string{"RedisRoundTrip", "StepFloor", "ProcessNoopExecBatched"} {
		in := strings.ReplaceAll(sample, "Benchmark"+name, "BenchmarkOther")
		var out bytes.Buffer
		err := run(strings.NewReader(in), &out, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("run without %s: %v, want an error naming it", name, err)
		}
	}
}

func TestSummarizeEven(t *testing.T) {
	s, err := summarize([]float64{4, 1, 3, 2})
	if err != nil || s.median != 2.5 || s.lo != 1 || s.hi != 4 {
		t.Fatalf("summarize = %+v, %v", s, err)
	}
}
