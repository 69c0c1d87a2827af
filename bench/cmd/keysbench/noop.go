package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
)

// measureNoop: a no-op handler (the log handler with the least work it
// accepts; at warn it logs nothing) and the default JOB_BATCH, pre-keys
// beside new: o.noopJobs over o.keys keys with o.parts partitions, and
// o.noopJobs keyless with one partition (the article's serial queue, the
// deep queue group commit is for).
func measureNoop(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	env := append([]string{"JOB_HANDLER=log", "WORK_DURATION=1ns"}, fastTimings...)
	type shape struct {
		what     string
		old, new *side
		items    []item
	}
	shapes := []shape{
		{what: fmt.Sprintf("no-op handler, JOB_BATCH default, %d jobs over %d keys, PARTITIONS=%d", o.noopJobs, o.keys, o.parts),
			old: newSide(f, "pre-keys", o.old, r, "kb-noop-keys-old", o.parts, env...),
			new: newSide(f, "new", o.bin, r, "kb-noop-keys-new", o.parts, env...), items: keyedItems(o.noopJobs, o.keys, "customer-")},
		{what: fmt.Sprintf("no-op handler, JOB_BATCH default, %d keyless jobs, PARTITIONS=1", o.noopJobs),
			old: newSide(f, "pre-keys", o.old, r, "kb-noop-serial-old", 1, env...),
			new: newSide(f, "new", o.bin, r, "kb-noop-serial-new", 1, env...), items: make([]item, o.noopJobs)},
	}
	for i := range shapes[1].items {
		shapes[1].items[i].Rank = i
	}
	var all []*side
	for _, s := range shapes {
		all = append(all, s.old, s.new)
	}
	if err := startAll(ctx, o.replicas, all...); err != nil {
		return nil, err
	}
	limit := time.Duration(o.noopJobs)*time.Millisecond + 2*time.Minute
	var rows []row
	for _, s := range shapes {
		if err := warmUp(ctx, c, s.items, s.old, s.new); err != nil {
			return nil, err
		}
		var olds, news, ratios, cpuOld, cpuNew, redisOld, redisNew []float64
		for rep := range o.reps {
			pair := []*side{s.old, s.new}
			if rep%2 == 1 {
				pair[0], pair[1] = pair[1], pair[0]
			}
			got := map[*side]timed{}
			for _, sd := range pair {
				t, err := sd.drain(ctx, c, s.items, 0, 10*time.Millisecond, limit)
				if err != nil {
					return nil, err
				}
				got[sd] = t
			}
			to, tn := got[s.old], got[s.new]
			o1, n1 := to.rate(), tn.rate()
			olds, news, ratios = append(olds, o1), append(news, n1), append(ratios, n1/o1)
			cpuOld, cpuNew = append(cpuOld, perJobUsec(to.cpu.replicas, to.jobs)), append(cpuNew, perJobUsec(tn.cpu.replicas, tn.jobs))
			redisOld, redisNew = append(redisOld, perJobUsec(to.cpu.redis, to.jobs)), append(redisNew, perJobUsec(tn.cpu.redis, tn.jobs))
			fmt.Fprintf(progress, "noop %d/%d (%d partitions): pre-keys %.0f jobs/s (%s), new %.0f jobs/s (%s): %.2fx\n",
				rep+1, o.reps, s.old.parts, o1, to.cpu, n1, tn.cpu, n1/o1)
		}
		rows = append(rows,
			row{What: s.what + ": jobs/s, pre-keys", Vals: olds, Unit: "jobs/s"},
			row{What: "  jobs/s, new (JOB_CONCURRENCY default)", Vals: news, Unit: "jobs/s"},
			row{What: "  new ÷ pre-keys", Vals: ratios, Unit: "x", Target: "≥ 0.9x", OK: func(v float64) bool { return v >= 0.9 }},
			row{What: "  replicas' CPU per job, pre-keys", Vals: cpuOld, Unit: "µs"},
			row{What: "  replicas' CPU per job, new", Vals: cpuNew, Unit: "µs"},
			row{What: "  Redis CPU per job (INFO cpu), pre-keys", Vals: redisOld, Unit: "µs"},
			row{What: "  Redis CPU per job (INFO cpu), new", Vals: redisNew, Unit: "µs"})
	}
	return rows, nil
}

func perJobUsec(d time.Duration, jobs int) float64 { return float64(d.Microseconds()) / float64(jobs) }
