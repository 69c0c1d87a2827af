// Command floodbench measures what a flood of half-open connections
// (each sends "GET / HTTP/1.1\r\nX: " and never finishes its headers)
// costs one real replica, and whether it still serves others meanwhile:
// /healthz and /readyz asked from 127.0.0.2 and POST /jobs from
// 127.0.0.3, each on a new connection, in rounds while the flood runs and
// for 20 rounds after it. Per flood: the replica's descriptors
// (/proc/PID/fd) and resident memory (VmRSS), before and at most (read
// after every round), the probes and POSTs answered, and the probes'
// latency.
//
// The flood comes from one loopback address, or is split over several
// (-sources 1,16: one run with each); its side closes every connection
// the replica has closed, so it needs descriptors only for what the
// replica keeps.
//
//	cd bench && go run ./cmd/floodbench [-conns 20000] [-sources 1,16] [-bin path]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/procfs"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/testkit/flood"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "floodbench:", err)
		os.Exit(1)
	}
}

// jobsToken is the replica's JOBS_TOKEN.
const jobsToken = "floodbench-jobs-token-0123456789"

// afterRounds is how many rounds of probes follow the flood, while the
// replica still holds its last connections.
const afterRounds = 20

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("floodbench", flag.ContinueOnError)
	conns := fs.Int("conns", 20_000, "half-open connections per flood, in all")
	sourcesFlag := fs.String("sources", "1,16", "comma-separated: one flood from each count of loopback addresses")
	bin := fs.String("bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var sources []int
	for s := range strings.SplitSeq(*sourcesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 200 {
			return fmt.Errorf("-sources: %q is not a count from 1 to 200", s)
		}
		sources = append(sources, n)
	}
	if *bin == "" {
		dir, err := os.MkdirTemp("", "floodbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if *bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d half-open connections per flood against one replica (defaults, JOB_HANDLER=demo);\n"+
		"probes from 127.0.0.2, POST /jobs from 127.0.0.3, each on a new connection, during the flood and %d rounds after\n\n", *conns, afterRounds)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "flood from\topened\treplica nofile\tdescriptors\tRSS\tprobes answered\tprobe p50 / p99 / max\tPOST /jobs accepted\tflood took")
	var failures []string
	for i, n := range sources {
		m, err := measure(ctx, f, *bin, r.URL(), fmt.Sprintf("replica-%d", i+1), n, *conns)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%d address(es)\t%d\t%d\t%d → %d\t%.1f → %.1f MB\t%d of %d\t%s / %s / %s\t%d of %d\t%s\n",
			n, m.opened, m.nofile, m.fdsBefore, m.fdsPeak, mb(m.rssBefore), mb(m.rssPeak),
			m.probes.Answered, m.probes.Asked, ms(m.probes.Quantile(0.5)), ms(m.probes.Quantile(0.99)), ms(m.probes.Quantile(1)),
			m.posts.Answered, m.posts.Asked, m.took.Round(100*time.Millisecond))
		for _, a := range []*flood.Asker{m.probes, m.posts} {
			if len(a.Failures) > 0 {
				failures = append(failures, fmt.Sprintf("%d address(es), first failure: %s", n, a.Failures[0]))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(failures) > 0 {
		fmt.Fprintf(stdout, "\n%s\n", strings.Join(failures, "\n"))
	}
	return nil
}

func mb(b int) float64 { return float64(b) / 1e6 }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// measured is one flood's figures.
type measured struct {
	opened, nofile     int
	fdsBefore, fdsPeak int
	rssBefore, rssPeak int
	probes, posts      *flood.Asker
	took               time.Duration
}

// measure starts a replica, floods it from sources addresses and
// measures it; the replica is stopped before it returns.
func measure(ctx context.Context, f *fleet.Fleet, bin, redisURL, name string, sources, conns int) (measured, error) {
	p, err := f.Start(fleet.Spec{Name: name, Path: bin, Env: []string{
		"REDIS_URLS=" + redisURL, "WORKER_ID=" + name, "LOG_LEVEL=warn", "JOBS_TOKEN=" + jobsToken,
	}})
	if err != nil {
		return measured{}, err
	}
	defer func() { _ = p.Kill() }()
	if err := waitLeads(ctx, p); err != nil {
		return measured{}, fmt.Errorf("%s: %w\n%s", name, err, p.Output())
	}
	proc, err := procfs.NewProc(p.PID())
	if err != nil {
		return measured{}, err
	}
	lim, err := proc.Limits()
	if err != nil {
		return measured{}, err
	}
	sample := func() (int, int, error) {
		fds, err := proc.FileDescriptorsLen()
		if err != nil {
			return 0, 0, err
		}
		st, err := proc.NewStatus()
		return fds, int(st.VmRSS), err
	}
	m := measured{nofile: int(lim.OpenFiles), probes: flood.NewAsker("127.0.0.2", 10*time.Second), posts: flood.NewAsker("127.0.0.3", 10*time.Second)}
	defer m.probes.Close()
	defer m.posts.Close()
	if m.fdsBefore, m.rssBefore, err = sample(); err != nil {
		return m, err
	}
	m.fdsPeak, m.rssPeak = m.fdsBefore, m.rssBefore

	addr := fmt.Sprintf("127.0.0.1:%d", p.Port)
	var floods []*flood.Flood
	defer func() {
		for _, fl := range floods {
			fl.Close()
		}
	}()
	start := time.Now()
	for i := range sources {
		from := "127.0.0.1"
		if sources > 1 {
			from = fmt.Sprintf("127.0.1.%d", i+1)
		}
		fl, err := flood.Start(flood.Config{Addr: addr, From: from, Conns: conns / sources, Parallel: max(4, 64/sources)})
		if err != nil {
			return m, err
		}
		floods = append(floods, fl)
	}
	auth := http.Header{"Authorization": {"Bearer " + jobsToken}}
	round := func(i int) error {
		for _, path := range []string{"/healthz", "/readyz"} {
			m.probes.Ask(ctx, http.MethodGet, p.URL()+path, "", nil, http.StatusOK)
		}
		if i%10 == 0 {
			m.posts.Ask(ctx, http.MethodPost, p.URL()+"/jobs", fmt.Sprintf(`{"round":%d}`, i), auth, http.StatusAccepted)
		}
		fds, rss, err := sample()
		m.fdsPeak, m.rssPeak = max(m.fdsPeak, fds), max(m.rssPeak, rss)
		return err
	}
	for i := 0; !allDone(floods); i++ {
		if err := round(i); err != nil {
			return m, err
		}
		if ctx.Err() != nil {
			return m, ctx.Err()
		}
	}
	m.took = time.Since(start)
	for _, fl := range floods {
		m.opened += fl.Result().Opened
		if err := fl.Result().FirstError; err != nil {
			return m, fmt.Errorf("the flood could not open %d connections: %w", fl.Result().Failed, err)
		}
	}
	for i := range afterRounds {
		if err := round(i); err != nil {
			return m, err
		}
	}
	return m, nil
}

func allDone(floods []*flood.Flood) bool {
	for _, fl := range floods {
		select {
		case <-fl.Done():
		default:
			return false
		}
	}
	return true
}

// waitLeads polls /status until p leads.
func waitLeads(ctx context.Context, p *fleet.Process) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		if s, err := p.Status(ctx); err == nil && s.Leader {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("did not lead in time")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
