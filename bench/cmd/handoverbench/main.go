// Command handoverbench measures lockworker's leader handover with real
// processes and real Redis servers: graceful (SIGTERM to the leader) and
// crash failover (kill -9 of the leader), with release notices on and off
// on one redis-server, and with notices on a Sentinel group and a Redis
// Cluster; there it also forces failovers of the Redis master under a busy
// leader and times the next committed job.
//
// A handover is timed from the supervisor's clock right before it sends the
// signal to the "time" of the new leader's log line for its transition to
// working. Both are the same machine's wall clock, and no polling error
// enters the figure.
//
//	cd bench && go run ./cmd/handoverbench [-rounds 20] [-ttl 2s] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoverbench:", err)
		os.Exit(1)
	}
}

// options are the benchmark's settings.
type options struct {
	rounds    int           // handovers per scenario
	replicas  int           // replicas kept running
	ttl       time.Duration // LOCK_TTL
	renew     time.Duration // RENEW_INTERVAL
	retry     time.Duration // RETRY_INTERVAL
	bin       string        // the lockworker binary
	notices   []bool        // RELEASE_NOTICES settings to run
	aof       bool          // redis-server with appendfsync always
	modes     []string      // Redis topologies to run on
	failovers int           // forced Redis failovers per topology that has them
	logs      io.Writer     // replica logs as they arrive; nil: none
}

// result is every sample of one run of the cluster.
type result struct {
	mode      string
	where     string
	notices   bool
	samples   map[kind][]sample
	failovers []failoverSample
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("handoverbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.rounds, "rounds", 20, "handovers per scenario")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas kept running (at least 2)")
	fs.DurationVar(&o.ttl, "ttl", 2*time.Second, "LOCK_TTL")
	fs.DurationVar(&o.renew, "renew", 500*time.Millisecond, "RENEW_INTERVAL (below TTL/2)")
	fs.DurationVar(&o.retry, "retry", time.Second, "RETRY_INTERVAL")
	fs.StringVar(&o.bin, "bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	notices := fs.String("notices", "both", "RELEASE_NOTICES to measure: both, on or off")
	fs.BoolVar(&o.aof, "aof", false, "run redis-server with appendonly yes, appendfsync always")
	modes := fs.String("modes", "standalone,sentinel,cluster", "Redis topologies, comma-separated: standalone, sentinel, cluster")
	fs.IntVar(&o.failovers, "failovers", 5, "forced Redis failovers per Sentinel or Cluster run")
	verbose := fs.Bool("v", false, "stream the replicas' JSON logs to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *notices {
	case "both":
		o.notices = []bool{true, false}
	case "on":
		o.notices = []bool{true}
	case "off":
		o.notices = []bool{false}
	default:
		return fmt.Errorf("-notices must be both, on or off, got %q", *notices)
	}
	if o.rounds < 1 || o.replicas < 2 || o.ttl <= 0 || o.renew <= 0 || o.retry <= 0 || o.failovers < 0 {
		return errors.New("need -rounds >= 1, -replicas >= 2, -failovers >= 0 and positive durations")
	}
	o.modes = strings.Split(*modes, ",")
	progress := &fleet.LockedWriter{W: stderr}
	if *verbose {
		o.logs = progress
	}
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "handoverbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}
	start := time.Now()
	results, err := measure(ctx, o, progress)
	if ctx.Err() != nil {
		return errors.New("interrupted: every replica and Redis server was killed")
	}
	if err != nil {
		return err
	}
	reportTo(stdout, o, results, time.Since(start))
	return nil
}

// measure starts each topology in turn and, for each notices setting (on
// only, but on one redis-server), a cluster of replicas; it stops the
// leader -rounds times gracefully, then -rounds times by kill -9, then
// forces -failovers Redis failovers where the topology has them. Every
// process is killed before it returns, and each topology's servers before
// the next one starts.
func measure(ctx context.Context, o options, progress io.Writer) ([]result, error) {
	rec := newRecorder()
	var results []result
	for _, mode := range o.modes {
		res, err := measureMode(ctx, o, mode, rec, progress)
		results = append(results, res...)
		if err != nil {
			return results, fmt.Errorf("%s: %w", mode, err)
		}
	}
	return results, nil
}

func measureMode(ctx context.Context, o options, mode string, rec *recorder, progress io.Writer) ([]result, error) {
	f := fleet.New(ctx)
	defer f.Close()
	notices := o.notices
	if mode != standalone {
		notices = []bool{true}
	}
	var results []result
	for _, on := range notices {
		c := &cluster{opts: o, fleet: f, rec: rec, mode: mode, notices: on,
			warn: func(format string, args ...any) { fmt.Fprintf(progress, "warning: "+format+"\n", args...) }}
		var err error
		if c.topo, err = startTopology(ctx, f, mode, c.lockKey(), o.aof); err != nil {
			return results, err
		}
		res, err := c.measure(ctx, progress)
		c.stop()
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

func (c *cluster) measure(ctx context.Context, progress io.Writer) (result, error) {
	res := result{mode: c.topo.mode, where: c.topo.where, notices: c.notices, samples: map[kind][]sample{}}
	for range c.opts.replicas {
		if err := c.start(); err != nil {
			return res, err
		}
	}
	leader, err := c.steady(ctx)
	if err != nil {
		return res, err
	}
	for _, k := range []kind{graceful, crash} {
		for i := range c.opts.rounds {
			s, next, err := c.round(ctx, leader, k)
			if err != nil {
				return res, err
			}
			res.samples[k] = append(res.samples[k], s)
			fmt.Fprintf(progress, "%-14s %-8s %2d/%d: %s → %s in %s (woken by %s)\n",
				c.prefix(), k, i+1, c.opts.rounds, s.from, s.to, ms(s.took), s.wokenBy)
			leader = next
		}
	}
	for i := range c.opts.failovers {
		if c.topo.failover == nil {
			break
		}
		s, err := c.failoverRound(ctx)
		if err != nil {
			return res, err
		}
		res.failovers = append(res.failovers, s)
		lost := ""
		if s.refilled {
			lost = " (the failover lost the queued jobs: one was enqueued on the new master)"
		}
		fmt.Fprintf(progress, "%-14s failover %2d/%d: master promoted after %s, next job committed after %s%s\n",
			c.prefix(), i+1, c.opts.failovers, ms(s.promoted), ms(s.commit), lost)
		if _, err := c.steady(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}
