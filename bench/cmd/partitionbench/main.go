// Command partitionbench measures what partitions buy and cost, with real
// lockworker processes on one real redis-server, each figure taken in
// several repetitions and reported as the median and range over them (a
// ratio pairs the two figures of one repetition):
//
//   - throughput: 3 replicas, a handler that takes 10 ms (the http handler
//     posting to a server in this process that sleeps 10 ms before it
//     answers 204), 3,000 jobs over 200 keys, PARTITIONS=16 beside
//     PARTITIONS=1; and the ratio the hash of the 200 keys allows at best
//     (each partition runs its jobs one at a time, so the fullest one
//     bounds the run);
//   - group commit: the same with a no-op handler (the log handler with
//     WORK_DURATION=1ns, nothing logged) and the default JOB_BATCH, and
//     Redis's CPU per committed job from INFO cpu and INFO commandstats;
//   - movement: a replica that owns several partitions gets SIGTERM (each
//     of its partitions working elsewhere, timed from the signal to the
//     new owner's log line), another gets kill -9 (until every partition
//     is owned again), a replica joins (until the fleet is balanced, and
//     how many partitions moved);
//   - idle: 3 replicas with PARTITIONS=64 and the default timings, Redis
//     commands per second in all from INFO commandstats.
//
// The queue is paused while a run's jobs are enqueued and timed from the
// resume to the last commit (the committed counters, polled).
//
//	cd bench && go run ./cmd/partitionbench [-reps 5] [-bin path] [-only slow,noop,move,idle] [-idle-window 60s]
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
		fmt.Fprintln(os.Stderr, "partitionbench:", err)
		os.Exit(1)
	}
}

// options are the benchmark's settings.
type options struct {
	bin        string
	reps       int
	replicas   int
	parts      int           // PARTITIONS of the throughput and movement runs
	jobs       int           // jobs of the 10 ms run
	keys       int           // their ordering keys
	work       time.Duration // the slow handler's time per job
	noopJobs   int           // jobs of the no-op run
	idleParts  int           // PARTITIONS of the idle fleet
	idleWindow time.Duration // each idle window
	idleSettle time.Duration // the idle fleet's run before its windows
	only       map[string]bool
}

// The parts of the benchmark, for -only.
const (
	partSlow = "slow"
	partNoop = "noop"
	partMove = "move"
	partIdle = "idle"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("partitionbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.bin, "bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of each measurement")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas of each fleet (at least 2)")
	fs.IntVar(&o.parts, "partitions", 16, "PARTITIONS of the throughput and movement runs (beside PARTITIONS=1)")
	fs.IntVar(&o.jobs, "jobs", 3000, "jobs of the slow-handler run")
	fs.IntVar(&o.keys, "keys", 200, "ordering keys of those jobs")
	fs.DurationVar(&o.work, "work", 10*time.Millisecond, "the slow handler's time per job")
	fs.IntVar(&o.noopJobs, "noop-jobs", 200000, "jobs of the no-op run")
	fs.IntVar(&o.idleParts, "idle-partitions", 64, "PARTITIONS of the idle fleet")
	fs.DurationVar(&o.idleWindow, "idle-window", time.Minute, "length of each idle window (one per repetition)")
	fs.DurationVar(&o.idleSettle, "idle-settle", 20*time.Second, "how long the idle fleet runs, once balanced, before its windows")
	only := fs.String("only", "slow,noop,move,idle", "parts to run, comma-separated: slow, noop, move, idle")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.reps < 1 || o.replicas < 2 || o.parts < 2 || o.jobs < 1 || o.keys < 1 || o.noopJobs < 1 || o.idleParts < 2 || o.idleWindow <= 0 || o.idleSettle < 0 {
		return errors.New("need -reps >= 1, -replicas >= 2, -partitions >= 2, -idle-partitions >= 2 and positive counts and window")
	}
	o.only = map[string]bool{}
	for p := range strings.SplitSeq(*only, ",") {
		switch p {
		case partSlow, partNoop, partMove, partIdle:
			o.only[p] = true
		default:
			return fmt.Errorf("-only: unknown part %q (slow, noop, move, idle)", p)
		}
	}
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "partitionbench-")
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
		{partSlow, measureSlow},
		{partNoop, measureNoop},
		{partMove, measureMoves},
		{partIdle, measureIdle},
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
