// Command timebench measures what time costs and keeps in lockworker's
// queue (delayed jobs, schedules, idempotent enqueue), with real replicas
// and real Redis servers, each figure over several repetitions, reported
// as the median and the range over them:
//
//   - delayed: 10,000 jobs over 100 keys, due within 10 s (at random
//     10 ms steps, so keys have ties), enqueued in random due order before
//     the first is due, 3 replicas with PARTITIONS=16 and the http handler
//     posting to a recorder in this process: jobs started before their due
//     time (must be 0), lateness (start − due) p50, p99 and max, and each
//     key's runs against due-time order (ties in enqueue order);
//
//   - idle: the same fleet shape with the default timings, Redis commands
//     per second (INFO commandstats, script-internal commands included, as
//     cmd/fleetidle counts) over windows of the idle fleet, then with
//     10,000 delayed jobs due in an hour, then with 100 schedules every
//     minute as well: what each adds, per replica;
//
//   - idem: a Sentinel group (a master, a replica, 3 sentinels),
//     REDIS_MIN_REPLICAS=1, 1,000 enqueues over POST /jobs each sent twice
//     at once with one Idempotency-Key (to two replicas), every 503
//     retried, and a forced Sentinel failover when half were sent: the
//     jobs run per idempotency key (must be 1 each).
//
//     cd bench && go run ./cmd/timebench [-reps 3] [-quick] [-only delayed,idle,idem] [-bin path]
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
		fmt.Fprintln(os.Stderr, "timebench:", err)
		os.Exit(1)
	}
}

// options are the benchmark's settings.
type options struct {
	bin      string
	reps     int
	replicas int
	parts    int // PARTITIONS of every fleet

	jobs   int           // delayed: jobs
	keys   int           // delayed: their ordering keys
	spread time.Duration // delayed: due times fall within this
	lead   time.Duration // delayed: from the enqueue's start to the first due time

	idleJobs   int           // idle: delayed jobs due in an hour
	schedules  int           // idle: schedules
	every      time.Duration // idle: their period
	idleWindow time.Duration // idle: each window
	idleSettle time.Duration // idle: the fleet's run, once balanced, before its windows
	idleFast   bool          // idle: the short timings instead of the defaults (the smoke test's)

	enqueues int           // idem: idempotency keys, each sent twice
	sendOver time.Duration // idem: the pairs are sent evenly over this

	only map[string]bool
}

// The parts of the benchmark, for -only.
const (
	partDelayed = "delayed"
	partIdle    = "idle"
	partIdem    = "idem"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("timebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.bin, "bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each measurement")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas of each fleet (at least 2)")
	fs.IntVar(&o.parts, "partitions", 16, "PARTITIONS of every fleet")
	fs.IntVar(&o.jobs, "jobs", 10000, "delayed: jobs")
	fs.IntVar(&o.keys, "keys", 100, "delayed: their ordering keys")
	fs.DurationVar(&o.spread, "spread", 10*time.Second, "delayed: the jobs fall due within this")
	fs.DurationVar(&o.lead, "lead", 3*time.Second, "delayed: from the enqueue's start to the first due time (the enqueue must end first)")
	fs.IntVar(&o.idleJobs, "idle-jobs", 10000, "idle: delayed jobs due in an hour")
	fs.IntVar(&o.schedules, "schedules", 100, "idle: schedules")
	fs.DurationVar(&o.every, "every", time.Minute, "idle: the schedules' period")
	fs.DurationVar(&o.idleWindow, "idle-window", time.Minute, "idle: each window (a multiple of -every counts each schedule's ticks alike)")
	fs.DurationVar(&o.idleSettle, "idle-settle", 20*time.Second, "idle: how long the fleet runs, once balanced, before its windows")
	fs.BoolVar(&o.idleFast, "idle-fast", false, "idle: LOCK_TTL=2s RENEW_INTERVAL=500ms RETRY_INTERVAL=1s instead of the defaults (a fleet that balances in seconds; not the idle figure)")
	fs.IntVar(&o.enqueues, "enqueues", 1000, "idem: idempotency keys, each sent twice at once")
	fs.DurationVar(&o.sendOver, "send-over", 10*time.Second, "idem: the pairs are sent evenly over this")
	quick := fs.Bool("quick", false, "one repetition, 10 s of idle settling (about 4 minutes in all)")
	only := fs.String("only", "delayed,idle,idem", "parts to run, comma-separated: delayed, idle, idem")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		o.reps, o.idleSettle = 1, 10*time.Second
	}
	if o.reps < 1 || o.replicas < 2 || o.parts < 1 || o.jobs < 1 || o.keys < 1 || o.spread <= 0 || o.lead <= 0 ||
		o.idleJobs < 0 || o.schedules < 0 || o.every <= 0 || o.idleWindow <= 0 || o.idleSettle < 0 || o.enqueues < 2 || o.sendOver < 0 {
		return errors.New("need -reps >= 1, -replicas >= 2, -partitions >= 1, -enqueues >= 2, positive counts and durations")
	}
	o.only = map[string]bool{}
	for p := range strings.SplitSeq(*only, ",") {
		switch p {
		case partDelayed, partIdle, partIdem:
			o.only[p] = true
		default:
			return fmt.Errorf("-only: unknown part %q (delayed, idle, idem)", p)
		}
	}
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "timebench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}
	progress := &fleet.LockedWriter{W: stderr}
	start := time.Now()
	var rows []row
	for _, part := range []struct {
		name    string
		measure func(context.Context, options, io.Writer) ([]row, error)
	}{
		{partDelayed, measureDelayed},
		{partIdle, measureIdle},
		{partIdem, measureIdempotent},
	} {
		if !o.only[part.name] {
			continue
		}
		r, err := part.measure(ctx, o, progress)
		if ctx.Err() != nil {
			return errors.New("interrupted: every replica and Redis server was killed")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", part.name, err)
		}
		rows = append(rows, r...)
	}
	report(stdout, o, rows, time.Since(start))
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
