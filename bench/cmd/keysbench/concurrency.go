package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/partition"
)

// defaults is the daemon's configuration with nothing set.
func defaults() config.Config {
	cfg, _ := config.Load(func(string) string { return "" })
	return cfg
}

// defaultConcurrency is the daemon's JOB_CONCURRENCY when unset.
func defaultConcurrency() int { return defaults().JobConcurrency }

// measureConcurrency: the http handler, o.work per job, pre-keys beside
// every JOB_CONCURRENCY of o.sweep.
func measureConcurrency(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	srv, err := startJobServer(o.work)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	return compare(ctx, o, progress, "http", o.sweep, srv, "JOB_HANDLER=http", "JOB_URL="+srv.url)
}

// measureExec: the exec handler running `sleep` for o.work, pre-keys
// beside the default JOB_CONCURRENCY.
func measureExec(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	return compare(ctx, o, progress, "exec", []int{defaultConcurrency()}, nil,
		"JOB_HANDLER=exec", fmt.Sprintf("JOB_COMMAND=/bin/sleep %g", o.work.Seconds()))
}

// compare drains o.jobs jobs over o.keys keys through a pre-keys fleet and
// a new fleet for each of cs, all on one Redis, their order rotating with
// each repetition.
func compare(ctx context.Context, o options, progress io.Writer, handler string, cs []int, srv *jobServer, env ...string) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	env = append(env, fastTimings...)
	old := newSide(f, "pre-keys", o.old, r, "kb-"+handler+"-old", o.parts, env...)
	sides := []*side{old}
	for _, cc := range cs {
		sides = append(sides, newSide(f, fmt.Sprintf("JOB_CONCURRENCY=%d", cc), o.bin, r,
			fmt.Sprintf("kb-%s-c%d", handler, cc), o.parts, append(env, fmt.Sprintf("JOB_CONCURRENCY=%d", cc))...))
	}
	if err := startAll(ctx, o.replicas, sides...); err != nil {
		return nil, err
	}

	items := keyedItems(o.jobs, o.keys, "customer-")
	busiest := int(math.Ceil(float64(o.jobs) / float64(o.keys)))
	keyBound := float64(o.jobs) / (float64(busiest) * o.work.Seconds())
	load := make([]int, o.parts)
	for _, it := range items {
		load[partition.Of(it.Key, o.parts)]++
	}
	fullest := slices.Max(load)
	partBound := float64(o.jobs) / (float64(fullest) * o.work.Seconds())

	if err := warmUp(ctx, c, items, sides...); err != nil {
		return nil, err
	}
	limit := time.Duration(o.jobs)*o.work*4 + time.Minute
	rates := make([][]float64, len(sides))
	cores := make([][]float64, len(sides))
	perJob := make([][]float64, len(sides))
	var reordered, repeated, requests int
	served := make([][]float64, len(sides))
	for rep := range o.reps {
		var line []string
		for i := range sides {
			k := (i + rep) % len(sides)
			s := sides[k]
			if srv != nil {
				srv.reset(nil)
			}
			t, err := s.drain(ctx, c, items, 0, 5*time.Millisecond, limit)
			if err != nil {
				return nil, err
			}
			if srv != nil {
				n, re, rp := srv.counts()
				requests, reordered, repeated = requests+n, reordered+re, repeated+rp
				served[k] = append(served[k], msF(srv.servedPerJob()))
			}
			rates[k] = append(rates[k], t.rate())
			cores[k], perJob[k] = append(cores[k], t.cores()), append(perJob[k], t.cpuPerJob())
			line = append(line, fmt.Sprintf("%s %.0f jobs/s (%s; %s; %.2f cores)", s.label, t.rate(), ms(t.took), t.cpu, t.cores()))
		}
		fmt.Fprintf(progress, "%s %d/%d: %v\n", handler, rep+1, o.reps, line)
	}

	what := fmt.Sprintf("%s handler, %s per job, %d jobs over %d keys, PARTITIONS=%d", handler, o.work, o.jobs, o.keys, o.parts)
	rows := []row{{What: what + ": jobs/s, pre-keys (one job at a time per partition)", Vals: rates[0], Unit: "jobs/s",
		Note: fmt.Sprintf("hash bound %.0f jobs/s (fullest partition %d jobs)", partBound, fullest)}}
	def := defaultConcurrency()
	for i, cc := range cs {
		s := sides[i+1]
		rows = append(rows, row{What: fmt.Sprintf("  jobs/s, %s", s.label), Vals: rates[i+1], Unit: "jobs/s",
			Note: fmt.Sprintf("slots bound %.0f jobs/s (%d replicas × %d ÷ %s)", float64(o.replicas*cc)/o.work.Seconds(), o.replicas, cc, o.work)})
	}
	for i, cc := range cs {
		ratio := make([]float64, o.reps)
		for j := range ratio {
			ratio[j] = rates[i+1][j] / rates[0][j]
		}
		rw := row{What: fmt.Sprintf("  %s ÷ pre-keys", sides[i+1].label), Vals: ratio, Unit: "x"}
		if cc == def && handler == "http" {
			rw.Target, rw.OK, rw.Note = "≥ 6x", func(v float64) bool { return v >= 6 }, "the default"
		}
		rows = append(rows, rw)
	}
	rows = append(rows, row{What: fmt.Sprintf("  bound the keys allow (busiest key %d jobs × %s)", busiest, o.work),
		Vals: []float64{keyBound}, Unit: "jobs/s", Note: "fixed by the keys"})
	for i := range cs {
		rows = append(rows, row{What: fmt.Sprintf("  fraction of the keys' bound reached, %s", sides[i+1].label),
			Vals: benchkit.Divide(rates[i+1], keyBound), Unit: ""})
	}
	for i, s := range sides {
		rows = append(rows, row{What: fmt.Sprintf("  CPU per job (replicas + Redis + bench), %s", s.label), Vals: perJob[i], Unit: "µs",
			Note: fmt.Sprintf("%.2f cores busy (median)", benchkit.Median(cores[i]))})
	}
	if srv != nil {
		var all []float64
		for _, v := range served {
			all = append(all, v...)
		}
		rows = append(rows, row{What: fmt.Sprintf("  the job server's own time per job (%s asked), every run", o.work), Vals: all, Unit: "ms",
			Note: "a sleep overruns on a busy machine"})
		rows = append(rows, row{What: fmt.Sprintf("  jobs run out of order within a key (of %d run)", requests),
			Vals: []float64{float64(reordered)}, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 },
			Note: fmt.Sprintf("%d run twice", repeated)})
	}
	return rows, nil
}
