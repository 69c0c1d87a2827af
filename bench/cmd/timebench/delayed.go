package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
)

// dueStep is the grain of the due times: coarse enough that a key's 100
// jobs over 10 s share some due times, so ties (enqueue order) are tested.
const dueStep = 10 * time.Millisecond

// delayedRound is what one repetition of the delayed part found.
type delayedRound struct {
	enqueue   time.Duration // the enqueue of every job
	lateness  []time.Duration
	early     int // jobs started before their due time
	repeated  int // runs of a job beyond its first
	dueHeader int // runs whose Lockworker-Due-At is not the due time given
	keysOut   int // keys whose runs are not in due-time order
	jobsOut   int // jobs not at their place in their key's due-time order
	ties      int // jobs due at the same time as the one before them in their key

	// Why jobs start late on a shared host: the scheduler's view of the
	// replicas, Redis and this process (the recorder) over the round, and
	// the host's load.
	replicas, redis, self schedTimes
	load                  float64
	bySecond              []time.Duration // p99 lateness of the jobs due in each second of the spread
}

// measureDelayed: o.jobs delayed jobs over o.keys keys on a fleet of
// o.replicas with o.parts partitions, each repetition on the same fleet.
func measureDelayed(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	rec, err := startRecorder()
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	env := append([]string{"REDIS_URLS=" + r.URL(), "JOB_HANDLER=http", "JOB_URL=" + rec.url, "LOG_LEVEL=warn"}, fastTimings...)
	g, err := startGroup(ctx, f, o.bin, "tb-delayed", o.replicas, o.parts, env, time.Minute)
	if err != nil {
		return nil, err
	}
	b, err := g.open()
	if err != nil {
		return nil, err
	}
	defer b.Close()

	pids := func() (replicas []int, redisPID, self int) {
		for _, p := range g.live {
			replicas = append(replicas, p.PID())
		}
		return replicas, serverPID(ctx, r.Addr()), os.Getpid()
	}
	var p50, p99, worst, early, repeated, keysOut, ties, enq, waitShare, loads []float64
	for rep := range o.reps {
		d, err := runDelayed(ctx, o, b.Queues, rec, rep, pids)
		if err != nil {
			return nil, fmt.Errorf("repetition %d: %w", rep+1, err)
		}
		s := slices.Clone(d.lateness)
		slices.Sort(s)
		p50, p99, worst = append(p50, msF(percentile(s, 50))), append(p99, msF(percentile(s, 99))), append(worst, msF(s[len(s)-1]))
		early, repeated = append(early, float64(d.early)), append(repeated, float64(d.repeated))
		keysOut, ties, enq = append(keysOut, float64(d.keysOut)), append(ties, float64(d.ties)), append(enq, msF(d.enqueue))
		waitShare, loads = append(waitShare, float64(d.replicas.wait)/float64(d.replicas.cpu)), append(loads, d.load)
		fmt.Fprintf(progress, "delayed %d/%d: replicas on a CPU %.0f ms, waiting for one %.0f ms; Redis %.0f / %.0f ms; this process %.0f / %.0f ms; load average %.1f; p99 lateness by second of the spread %v\n",
			rep+1, o.reps, msF(d.replicas.cpu), msF(d.replicas.wait), msF(d.redis.cpu), msF(d.redis.wait), msF(d.self.cpu), msF(d.self.wait), d.load, msList(d.bySecond))
		fmt.Fprintf(progress, "delayed %d/%d: enqueued in %.0f ms; lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d early, %d repeated, %d keys (%d jobs) out of due order, %d ties, %d due headers differ\n",
			rep+1, o.reps, msF(d.enqueue), p50[rep], p99[rep], worst[rep], d.early, d.repeated, d.keysOut, d.jobsOut, d.ties, d.dueHeader)
	}
	what := fmt.Sprintf("delayed: %s jobs over %d keys due within %s, %d replicas, PARTITIONS=%d", benchkit.Commas(strconv.Itoa(o.jobs)), o.keys, o.spread, o.replicas, o.parts)
	zero := func(v float64) bool { return v == 0 }
	return []row{
		{What: what + ": jobs started before due", Vals: early, Target: "0", OK: zero},
		{What: "  lateness (start − due), median", Vals: p50, Unit: "ms"},
		{What: "  lateness (start − due), p99", Vals: p99, Unit: "ms", Target: "≤ 250 ms", OK: func(v float64) bool { return v <= 250 }},
		{What: "  lateness (start − due), max", Vals: worst, Unit: "ms"},
		{What: fmt.Sprintf("  keys whose runs are not in due-time order (of %d)", o.keys), Vals: keysOut, Target: "0", OK: zero,
			Note: "ties in enqueue order"},
		{What: "  ties: jobs due with the one before them in their key", Vals: ties, Note: "what checks the tie rule"},
		{What: "  jobs run more than once", Vals: repeated},
		{What: "  enqueue of every job (EnqueueItems, 1,000 a call)", Vals: enq, Unit: "ms"},
		{What: "  replicas' time runnable but waiting for a CPU ÷ their time on one", Vals: waitShare, Unit: "x",
			Note: "/proc/PID/task/*/schedstat over the round"},
		{What: "  host load average (1 min) at the round's end", Vals: loads, Note: "2 cores"},
	}, nil
}

// runDelayed enqueues one repetition's jobs, waits until each ran, and
// checks the runs.
func runDelayed(ctx context.Context, o options, router *jobs.Router, rec *recorder, rep int, pids func() ([]int, int, int)) (delayedRound, error) {
	replicaPIDs, redisPID, self := pids()
	sched := func() (replicas, redis, me schedTimes) {
		for _, p := range replicaPIDs {
			s := readSched(p)
			replicas.cpu, replicas.wait = replicas.cpu+s.cpu, replicas.wait+s.wait
		}
		return replicas, readSched(redisPID), readSched(self)
	}
	r0, s0, m0 := sched()
	rng := rand.New(rand.NewPCG(uint64(rep), 35))
	steps := int(o.spread / dueStep)
	start := time.Now()
	base := start.Add(o.lead).Truncate(time.Millisecond)
	due := make([]time.Time, o.jobs)
	items := make([]jobs.Item, o.jobs)
	for i := range items {
		due[i] = base.Add(time.Duration(rng.IntN(steps)) * dueStep)
		items[i] = jobs.Item{Key: fmt.Sprintf("key-%d", i%o.keys), NotBefore: due[i], Payload: fmt.Appendf(nil, "%d/%d", rep, i)}
	}
	rec.take()
	for i := 0; i < len(items); i += jobs.MaxBatch {
		if _, err := router.EnqueueItems(ctx, items[i:min(i+jobs.MaxBatch, len(items))]); err != nil {
			return delayedRound{}, fmt.Errorf("enqueue: %w", err)
		}
	}
	res := delayedRound{enqueue: time.Since(start)}
	if time.Now().After(base) {
		return res, fmt.Errorf("the enqueue took %s, longer than -lead %s: the first jobs fell due before the last were enqueued", res.enqueue, o.lead)
	}
	limit := time.Now().Add(o.lead + o.spread + time.Minute)
	for rec.distinct(jobIDOf) < o.jobs {
		if time.Now().After(limit) {
			return res, fmt.Errorf("%d of %d jobs ran within a minute of the last due time", rec.distinct(jobIDOf), o.jobs)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return res, err
		}
	}
	// Nothing should run again; a second's grace shows it if it does.
	if err := sleep(ctx, time.Second); err != nil {
		return res, err
	}
	r1, s1, m1 := sched()
	res.replicas, res.redis, res.self, res.load = r1.sub(r0), s1.sub(s0), m1.sub(m0), loadAverage()
	runs := rec.take()
	res, err := checkDelayed(res, runs, due, o.keys, rep)
	res.bySecond = lateBySecond(runs, due, base, o.spread, rep)
	return res, err
}

// lateBySecond is the p99 lateness of the first runs of the jobs due in
// each second after base.
func lateBySecond(runs []delivery, due []time.Time, base time.Time, spread time.Duration, rep int) []time.Duration {
	buckets := make([][]time.Duration, int((spread+time.Second-1)/time.Second))
	seen := make([]bool, len(due))
	for _, d := range runs {
		i, err := strconv.Atoi(strings.TrimPrefix(d.payload, strconv.Itoa(rep)+"/"))
		if err != nil || i < 0 || i >= len(due) || seen[i] {
			continue
		}
		seen[i] = true
		b := min(int(due[i].Sub(base)/time.Second), len(buckets)-1)
		buckets[b] = append(buckets[b], d.at.Sub(due[i]))
	}
	out := make([]time.Duration, len(buckets))
	for b, ls := range buckets {
		if len(ls) > 0 {
			slices.Sort(ls)
			out[b] = percentile(ls, 99)
		}
	}
	return out
}

// serverPID is the process ID of the redis-server at addr (0 if it does
// not say).
func serverPID(ctx context.Context, addr string) int {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// checkDelayed reads the runs of one repetition: lateness and early
// starts of each job's first run, repeats, and each key's order against
// due-time order (ties in enqueue order, i.e. by index).
func checkDelayed(res delayedRound, runs []delivery, due []time.Time, keys, rep int) (delayedRound, error) {
	seen := make([]bool, len(due))
	order := make([][]int, keys) // each key's jobs, by index, in the order they started
	prefix := strconv.Itoa(rep) + "/"
	for _, d := range runs {
		i, err := strconv.Atoi(strings.TrimPrefix(d.payload, prefix))
		if err != nil || !strings.HasPrefix(d.payload, prefix) || i < 0 || i >= len(due) {
			return res, fmt.Errorf("a run of another repetition or an unknown job: %q", d.payload)
		}
		if seen[i] {
			res.repeated++
			continue
		}
		seen[i] = true
		late := d.at.Sub(due[i])
		res.lateness = append(res.lateness, late)
		if late < 0 {
			res.early++
		}
		if d.dueAt != jobs.FormatTime(due[i]) {
			res.dueHeader++
		}
		order[i%keys] = append(order[i%keys], i)
	}
	for _, got := range order {
		want := slices.Clone(got)
		slices.SortStableFunc(want, func(a, b int) int { return cmp.Or(due[a].Compare(due[b]), cmp.Compare(a, b)) })
		out := 0
		for j := range got {
			if got[j] != want[j] {
				out++
			}
			if j > 0 && due[want[j]].Equal(due[want[j-1]]) {
				res.ties++
			}
		}
		if out > 0 {
			res.keysOut++
			res.jobsOut += out
		}
	}
	return res, nil
}
