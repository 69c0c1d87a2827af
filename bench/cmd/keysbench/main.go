// Command keysbench measures what running the keys of a partition side by
// side buys and costs, with real lockworker processes on one real
// redis-server, each figure taken in several repetitions and reported as
// the median and range over them (a ratio pairs the two figures of one
// repetition, taken one after the other, their order alternating):
//
//   - concurrency: 3 replicas, PARTITIONS=16, 3,000 jobs over 200 keys,
//     the http handler posting to a server in this process that takes
//     10 ms per job; the pre-keys daemon (-old: one job at a time per
//     partition, the behaviour before keys) beside the new one at
//     JOB_CONCURRENCY 1, 4, 16, 32 and 64; the bound the keys allow (the
//     busiest key's jobs × 10 ms) and the fraction of it reached; the same
//     with the exec handler running `sleep 0.01`;
//   - group commit: a no-op handler (the log handler, WORK_DURATION=1ns)
//     with the default JOB_BATCH, pre-keys beside new, over 200 keys with
//     PARTITIONS=16 and keyless with PARTITIONS=1 (the deep serial queue);
//   - poison: one key among 200 whose first job always fails: the other
//     keys' jobs/s beside the same run without it; none of its later jobs
//     run before the key is parked and skipped; after the skip, the time
//     until its held jobs are committed, and their order;
//   - outage: the http handler's server down while jobs arrive for 50
//     keys, with the default retry settings: parked keys, dead letters,
//     order violations, and the time from the server's return until every
//     job is committed;
//   - idle: 3 replicas, PARTITIONS=64, 100 parked keys, the default
//     timings: Redis commands per second in all, from INFO commandstats.
//
// A run's jobs are enqueued while its queues are paused and timed from the
// resume to the last commit (the committed counters, polled). Both daemons
// are driven the same way: jobs enqueued with their own `lockworker
// enqueue --lines`, the pause and its lifting written as both lay them out
// (the same keys: the layout did not change for them).
//
//	cd bench && go run ./cmd/keysbench -old path/to/pre-keys/lockworker [-reps 3] [-quick] [-only conc,exec,noop,poison,outage,idle]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
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
		fmt.Fprintln(os.Stderr, "keysbench:", err)
		os.Exit(1)
	}
}

// options are the benchmark's settings.
type options struct {
	bin, old   string
	prekeys    string // the commit -old is built from when not given
	reps       int
	replicas   int
	parts      int           // PARTITIONS of every run but the idle one
	jobs       int           // jobs of the 10 ms runs
	keys       int           // their ordering keys
	work       time.Duration // the handler's time per job
	sweep      []int         // JOB_CONCURRENCY values
	noopJobs   int
	held       int           // the poisoned key's later jobs
	outage     time.Duration // how long the http handler's server is down
	outageKeys int
	arrivals   int // jobs per second enqueued around the outage
	idleParts  int
	idleParked int
	idleWindow time.Duration
	idleSettle time.Duration
	only       map[string]bool
}

// The parts of the benchmark, for -only.
var parts = []string{"conc", "exec", "noop", "poison", "outage", "idle"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("keysbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.bin, "bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	fs.StringVar(&o.old, "old", "", "the pre-keys lockworker binary (default: built from -prekeys with git archive)")
	fs.StringVar(&o.prekeys, "prekeys", "aac7a18", "the commit -old is built from when not given (the keys branch's base)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each measurement")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas of each fleet")
	fs.IntVar(&o.parts, "partitions", 16, "PARTITIONS of the throughput, poison and outage runs")
	fs.IntVar(&o.jobs, "jobs", 3000, "jobs of the 10 ms runs")
	fs.IntVar(&o.keys, "keys", 200, "ordering keys of those jobs")
	fs.DurationVar(&o.work, "work", 10*time.Millisecond, "the handler's time per job")
	sweep := fs.String("sweep", "1,4,16,32,64", "JOB_CONCURRENCY values of the concurrency part")
	fs.IntVar(&o.noopJobs, "noop-jobs", 50000, "jobs of each no-op run")
	fs.IntVar(&o.held, "held", 100, "the poisoned key's jobs after its failing one")
	fs.DurationVar(&o.outage, "outage", time.Minute, "how long the http handler's server is down")
	fs.IntVar(&o.outageKeys, "outage-keys", 50, "keys of the jobs enqueued around the outage")
	fs.IntVar(&o.arrivals, "arrivals", 20, "jobs per second enqueued around the outage")
	fs.IntVar(&o.idleParts, "idle-partitions", 64, "PARTITIONS of the idle fleet")
	fs.IntVar(&o.idleParked, "idle-parked", 100, "parked keys of the idle fleet")
	fs.DurationVar(&o.idleWindow, "idle-window", time.Minute, "length of each idle window (one per repetition)")
	fs.DurationVar(&o.idleSettle, "idle-settle", 20*time.Second, "how long the idle fleet runs, once its keys are parked, before its windows")
	quick := fs.Bool("quick", false, "a quick run (about 2 minutes): -reps 1 -noop-jobs 10000 -outage 15s -idle-window 15s -idle-settle 10s, unless given")
	only := fs.String("only", strings.Join(parts, ","), "parts to run, comma-separated: "+strings.Join(parts, ", "))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, v := range map[string]string{"reps": "1", "noop-jobs": "10000", "outage": "15s", "idle-window": "15s", "idle-settle": "10s"} {
			if !given[name] {
				_ = fs.Set(name, v)
			}
		}
	}
	o.sweep = nil
	for s := range strings.SplitSeq(*sweep, ",") {
		c, err := strconv.Atoi(s)
		if err != nil || c < 1 {
			return fmt.Errorf("-sweep: %q is not a JOB_CONCURRENCY", s)
		}
		o.sweep = append(o.sweep, c)
	}
	if o.reps < 1 || o.replicas < 1 || o.parts < 1 || o.jobs < 1 || o.keys < 2 || o.noopJobs < 1 || o.held < 1 ||
		o.outage <= 0 || o.outageKeys < 1 || o.arrivals < 1 || o.idleParts < 2 || o.idleParked < 1 || o.idleWindow <= 0 || o.idleSettle < 0 {
		return errors.New("need -reps, -replicas, -partitions, -jobs, -held, -outage-keys, -arrivals, -idle-parked >= 1, -keys, -idle-partitions >= 2, and positive durations")
	}
	o.only = map[string]bool{}
	for p := range strings.SplitSeq(*only, ",") {
		if !strings.Contains(","+strings.Join(parts, ",")+",", ","+p+",") {
			return fmt.Errorf("-only: unknown part %q (%s)", p, strings.Join(parts, ", "))
		}
		o.only[p] = true
	}
	dir, err := os.MkdirTemp("", "keysbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.bin == "" {
		if o.bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}
	if o.old == "" && (o.only["conc"] || o.only["exec"] || o.only["noop"]) {
		fmt.Fprintf(stderr, "keysbench: building the pre-keys daemon (%s); -old skips this\n", o.prekeys)
		if o.old, err = buildAt(ctx, o.prekeys, dir); err != nil {
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
		{"conc", measureConcurrency},
		{"exec", measureExec},
		{"noop", measureNoop},
		{"poison", measurePoison},
		{"outage", measureOutage},
		{"idle", measureIdle},
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

// buildAt builds the daemon as it was at commit, from `git archive` of the
// parent module's repository into a directory under dir (no worktree is
// touched), with the flags `make build` uses.
func buildAt(ctx context.Context, commit, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/lockworker/lockworker").Output()
	if err != nil {
		return "", fmt.Errorf("find the lockworker module (run inside the bench module, or pass -old): %w", err)
	}
	src := filepath.Join(dir, "src-"+commit)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", strings.TrimSpace(string(out)), commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %w\n%s", commit, err, out)
	}
	bin := filepath.Join(dir, "lockworker-"+commit)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/lockworker")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/lockworker at %s: %w\n%s", commit, err, out)
	}
	return bin, nil
}
