package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
)

// run starts the Redis servers, measures every cell reps times (the
// repetitions interleave, so a noisy moment on a shared machine spreads
// over all rows instead of hitting one), then the idle cost, and prints
// the report. Every process it starts is killed before it returns, also on
// error or interrupt (fleet.Close; Pdeathsig if this process is killed).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	f := fleet.New(ctx)
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	bin := o.bin
	if bin == "" && o.idle > 0 {
		dir, err := os.MkdirTemp("", "peerbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stderr, "peerbench: building lockworker for the idle cost")
		if bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}

	var redlock []string
	for i := range o.redlockNodes {
		r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: fmt.Sprintf("redis-%d", i)})
		if err != nil {
			return err
		}
		redlock = append(redlock, r.Addr())
	}
	// The single-node cells use a server of their own, so the Redlock
	// nodes' keys never weigh on them.
	single, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis-single"})
	if err != nil {
		return err
	}
	probe := newClient(single.Addr(), o)
	machine := describeMachine(ctx, probe)
	_ = probe.Close()

	scs := scenarios(o)
	samples := make([][][]sample, len(scs)) // scenario, contender, repetition
	for i, sc := range scs {
		samples[i] = make([][]sample, len(sc.contenders))
	}
	began := time.Now()
	for rep := range o.reps {
		for i, sc := range scs {
			addrs := []string{single.Addr()}
			if sc.redlock {
				addrs = redlock
			}
			for j, c := range sc.contenders {
				s, err := measureCell(ctx, sc, c, addrs, rep, o)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", sc.name, c.name, err)
				}
				samples[i][j] = append(samples[i][j], s)
				fmt.Fprintf(stderr, "peerbench: rep %d/%d, %s, %s: %.0f ops/s\n",
					rep+1, o.reps, sc.name, c.name, float64(len(s.lat))/s.elapsed.Seconds())
			}
		}
	}
	measured := time.Since(began)

	r := report{machine: machine}
	for i, sc := range scs {
		blk := scenarioResult{sc: sc}
		for j, c := range sc.contenders {
			blk.rows = append(blk.rows, result{c: c, f: summarize(samples[i][j])})
		}
		r.blocks = append(r.blocks, blk)
	}
	r.settings = []string{
		fmt.Sprintf("Each cell: %s measured after %s of warm-up, %d repetitions interleaved, medians shown (cells took %s in all).",
			o.cell, o.warmup, o.reps, measured.Round(time.Second)),
		fmt.Sprintf("Every library gets go-redis %s clients built alike: %s. Contended: one client per worker; distinct keys: one shared client.",
			moduleVersion("github.com/redis/go-redis/v9"), describeClients(o)),
		fmt.Sprintf("Locks: TTL %s everywhere; each acquire tries once. lockworker internal/redislock, NodeTimeout %s; "+
			"bsm/redislock %s, NoRetry; redsync %s, WithTries(1), timeout factor %.2f (= %s per attempt).",
			o.ttl, o.nodeTimeout, moduleVersion("github.com/bsm/redislock"), moduleVersion("github.com/go-redsync/redsync/v4"),
			float64(o.nodeTimeout)/float64(o.ttl), o.nodeTimeout),
		"ops/s = acquire+release cycles per second over all workers (contended: acquisitions per second). " +
			"raw SET NX PX + DEL is the floor of a lock cycle: two round trips, no safety. " +
			"RTT = p50 of the 1-goroutine raw PING row (with many workers, p50 ÷ RTT includes queueing). " +
			"Redis CPU/op = the redis-servers' user+system CPU (INFO cpu, summed over nodes) per op, failed tries included.",
	}
	if o.idle > 0 {
		fmt.Fprintf(stderr, "peerbench: idle cost of a leader and a follower over %s\n", o.idle)
		if r.idle, err = measureIdle(ctx, f, bin, o); err != nil {
			return fmt.Errorf("idle cost: %w", err)
		}
		r.settings = append(r.settings, "Idle: the real lockworker binary, one leader and one follower against a redis-server of their own; "+
			"CPU and RSS from /proc/<pid>/stat and status; commands counted per client name from MONITOR (Lua-internal calls excluded).")
	}
	return r.write(stdout)
}
