package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/partition"
)

// timed is one drain of a queue filled beforehand.
type timed struct {
	took  time.Duration
	jobs  int
	redis benchkit.ServerStats // what Redis did from the resume to the last commit
	polls int                  // the bench's polls of the committed counters
}

func (t timed) rate() float64 { return float64(t.jobs) / t.took.Seconds() }

// drain pauses every partition, enqueues items, and times the fleet from
// the resume until every item is committed, polling the committed
// counters every interval.
func drain(ctx context.Context, p *producer, c *redis.Client, items []jobs.Item, interval, limit time.Duration) (timed, error) {
	base, err := p.committed(ctx)
	if err != nil {
		return timed{}, err
	}
	if err := p.pause(ctx, true); err != nil {
		return timed{}, err
	}
	for i := 0; i < len(items); i += jobs.MaxBatch {
		if _, err := p.b.Queues.EnqueueMany(ctx, items[i:min(i+jobs.MaxBatch, len(items))]); err != nil {
			return timed{}, fmt.Errorf("enqueue: %w", err)
		}
	}
	before, err := benchkit.ReadServerStats(ctx, c)
	if err != nil {
		return timed{}, err
	}
	start := time.Now()
	if err := p.pause(ctx, false); err != nil {
		return timed{}, err
	}
	end, polls, err := p.waitCommitted(ctx, base+int64(len(items)), interval, limit)
	if err != nil {
		return timed{}, err
	}
	after, err := benchkit.ReadServerStats(ctx, c)
	if err != nil {
		return timed{}, err
	}
	return timed{took: end.Sub(start), jobs: len(items), redis: after.Since(before), polls: polls}, nil
}

// keyedItems is n jobs over keys ordering keys, round robin: job i has key
// "customer-<i mod keys>" and its rank within that key as payload.
func keyedItems(n, keys int) []jobs.Item {
	items := make([]jobs.Item, n)
	for i := range items {
		items[i] = jobs.Item{Key: fmt.Sprintf("customer-%d", i%keys), Payload: []byte(strconv.Itoa(i / keys))}
	}
	return items
}

// makespanBound is the best ratio parts partitions can reach over one on
// items when every job takes the same time: each partition runs its jobs
// one at a time, so the fullest partition bounds the run. It also returns
// the fewest and most jobs of a partition.
func makespanBound(items []jobs.Item, parts int) (bound float64, lo, hi int) {
	load := make([]int, parts)
	for _, it := range items {
		load[partition.Of(it.Key, parts)]++
	}
	lo, hi = len(items), 0
	for _, n := range load {
		lo, hi = min(lo, n), max(hi, n)
	}
	return float64(len(items)) / float64(hi), lo, hi
}

// otherKeySets is makespanBound for sets other key sets of the same
// shape ("set<s>-customer-<i>"): how much the bound depends on which keys
// a run happens to have.
func otherKeySets(n, keys, parts, sets int) []float64 {
	out := make([]float64, sets)
	items := make([]jobs.Item, n)
	for s := range out {
		for i := range items {
			items[i].Key = fmt.Sprintf("set%d-customer-%d", s, i%keys)
		}
		out[s], _, _ = makespanBound(items, parts)
	}
	return out
}

// slowServer answers each job after sleeping work, and checks that each
// key's jobs arrive in order (the payload is the job's rank in its key).
type slowServer struct {
	work time.Duration
	srv  *http.Server
	url  string

	mu        sync.Mutex
	last      map[string]int
	requests  int
	reordered int
	repeated  int
}

func startSlowServer(work time.Duration) (*slowServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &slowServer{work: work, url: "http://" + ln.Addr().String() + "/job", last: map[string]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *slowServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	time.Sleep(s.work)
	rank, _ := strconv.Atoi(string(body))
	key := r.Header.Get(jobs.HeaderKey)
	s.mu.Lock()
	s.requests++
	if prev, ok := s.last[key]; ok && rank < prev {
		s.reordered++
	} else if ok && rank == prev {
		s.repeated++
	}
	s.last[key] = rank
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// reset forgets the keys seen: a new run starts every key at rank 0.
func (s *slowServer) reset() {
	s.mu.Lock()
	clear(s.last)
	s.mu.Unlock()
}

func (s *slowServer) counts() (requests, reordered, repeated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.reordered, s.repeated
}

func (s *slowServer) Close() error { return s.srv.Close() }

// pair is a fleet without partitions beside one with them, on one Redis.
type pair struct {
	one, many       *group
	oneProd, manyPr *producer
}

// startPair starts both fleets (named after what) with env and waits
// until each is balanced.
func startPair(ctx context.Context, f *fleet.Fleet, o options, r *fleet.Redis, what string, env ...string) (*pair, error) {
	env = append(env, fastTimings...)
	pr := &pair{
		one:  newGroup(f, o.bin, r, fmt.Sprintf("pb-%s-p1", what), 1, env...),
		many: newGroup(f, o.bin, r, fmt.Sprintf("pb-%s-p%d", what, o.parts), o.parts, env...),
	}
	for _, g := range []*group{pr.one, pr.many} {
		if err := g.startBalanced(ctx, o.replicas, time.Minute); err != nil {
			return nil, err
		}
	}
	var err error
	if pr.oneProd, err = openProducer(ctx, pr.one); err != nil {
		return nil, err
	}
	if pr.manyPr, err = openProducer(ctx, pr.many); err != nil {
		_ = pr.oneProd.Close()
		return nil, err
	}
	return pr, nil
}

func (pr *pair) Close() {
	_ = pr.oneProd.Close()
	_ = pr.manyPr.Close()
}

// both drains items through each fleet of the pair, the one without
// partitions first in even repetitions, second in odd ones (so a trend
// of the shared machine does not favour one side).
func (pr *pair) both(ctx context.Context, rep int, c *redis.Client, items []jobs.Item, interval, limit time.Duration, before func()) (one, many timed, err error) {
	order := []*producer{pr.oneProd, pr.manyPr}
	if rep%2 == 1 {
		order[0], order[1] = order[1], order[0]
	}
	out := map[*producer]timed{}
	for _, p := range order {
		if before != nil {
			before()
		}
		t, err := drain(ctx, p, c, items, interval, limit)
		if err != nil {
			return timed{}, timed{}, fmt.Errorf("PARTITIONS=%d: %w", p.parts, err)
		}
		out[p] = t
	}
	return out[pr.oneProd], out[pr.manyPr], nil
}

// measureSlow: a handler that takes o.work, o.jobs jobs over o.keys keys.
func measureSlow(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	srv, err := startSlowServer(o.work)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	pr, err := startPair(ctx, f, o, r, "slow", "JOB_HANDLER=http", "JOB_URL="+srv.url, "LOG_LEVEL=warn")
	if err != nil {
		return nil, err
	}
	defer pr.Close()

	items := keyedItems(o.jobs, o.keys)
	bound, lo, hi := makespanBound(items, o.parts)
	others := otherKeySets(o.jobs, o.keys, o.parts, 1000)
	reach := 0
	for _, b := range others {
		if b >= 12 {
			reach++
		}
	}
	limit := time.Duration(o.jobs)*o.work*4 + 30*time.Second
	var ones, manys, ratios []float64
	for rep := range o.reps {
		one, many, err := pr.both(ctx, rep, c, items, 20*time.Millisecond, limit, srv.reset)
		if err != nil {
			return nil, err
		}
		ones, manys = append(ones, one.rate()), append(manys, many.rate())
		ratios = append(ratios, many.rate()/one.rate())
		fmt.Fprintf(progress, "slow %d/%d: PARTITIONS=1 %.1f jobs/s (%s), PARTITIONS=%d %.1f jobs/s (%s): %.2fx\n",
			rep+1, o.reps, one.rate(), ms(one.took), o.parts, many.rate(), ms(many.took), many.rate()/one.rate())
	}
	requests, reordered, repeated := srv.counts()
	fmt.Fprintf(progress, "slow: %d requests, %d out of order within a key, %d repeated\n", requests, reordered, repeated)
	what := fmt.Sprintf("%s handler, %d jobs over %d keys", o.work, o.jobs, o.keys)
	return []row{
		{What: what + ": jobs/s, PARTITIONS=1", Vals: ones, Unit: "jobs/s"},
		{What: fmt.Sprintf("%s: jobs/s, PARTITIONS=%d", what, o.parts), Vals: manys, Unit: "jobs/s"},
		{What: fmt.Sprintf("%s: PARTITIONS=%d ÷ PARTITIONS=1", what, o.parts), Vals: ratios, Unit: "x",
			Target: "≥ 12x", OK: func(v float64) bool { return v >= 12 }},
		{What: fmt.Sprintf("  best the key hash allows (fullest partition %d jobs, emptiest %d)", hi, lo),
			Vals: []float64{bound}, Unit: "x", Note: "fixed by the keys"},
		{What: "  measured ÷ best the hash allows", Vals: benchkit.Divide(ratios, bound), Unit: "x"},
		{What: fmt.Sprintf("  best the hash allows, 1,000 other sets of %d keys", o.keys), Vals: others, Unit: "x",
			Note: fmt.Sprintf("sets, not runs; %d of 1,000 allow ≥ 12x", reach)},
		{What: fmt.Sprintf("  jobs run out of order within a key (of %d run)", requests),
			Vals: []float64{float64(reordered)}, Unit: "", Note: fmt.Sprintf("%d run twice", repeated)},
	}, nil
}

// measureNoop: a no-op handler with group commit (the default JOB_BATCH).
func measureNoop(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	// The log handler with the least work it accepts; at warn it logs
	// nothing, so the job costs a timer and the step.
	pr, err := startPair(ctx, f, o, r, "noop", "JOB_HANDLER=log", "WORK_DURATION=1ns", "LOG_LEVEL=warn")
	if err != nil {
		return nil, err
	}
	defer pr.Close()

	items := keyedItems(o.noopJobs, max(o.keys, 1))
	limit := time.Duration(o.noopJobs)*time.Millisecond + time.Minute
	var ones, manys, ratios, cpu1, cpuN, scr1, scrN, cmd1, cmdN []float64
	for rep := range o.reps {
		one, many, err := pr.both(ctx, rep, c, items, 25*time.Millisecond, limit, nil)
		if err != nil {
			return nil, err
		}
		ones, manys = append(ones, one.rate()), append(manys, many.rate())
		ratios = append(ratios, many.rate()/one.rate())
		perJob := func(t timed, usec float64) float64 { return usec / float64(t.jobs) }
		cpu1 = append(cpu1, perJob(one, float64(one.redis.CPU.Microseconds())))
		cpuN = append(cpuN, perJob(many, float64(many.redis.CPU.Microseconds())))
		scr1 = append(scr1, perJob(one, float64(one.redis.ScriptUsec())))
		scrN = append(scrN, perJob(many, float64(many.redis.ScriptUsec())))
		cmd1 = append(cmd1, perJob(one, float64(one.redis.Calls())))
		cmdN = append(cmdN, perJob(many, float64(many.redis.Calls())))
		fmt.Fprintf(progress, "noop %d/%d: PARTITIONS=1 %.0f jobs/s (%s, Redis CPU %.2f µs/job; %s), PARTITIONS=%d %.0f jobs/s (%s, Redis CPU %.2f µs/job; %s): %.2fx\n",
			rep+1, o.reps, one.rate(), ms(one.took), cpu1[rep], one.redis.Top(6),
			o.parts, many.rate(), ms(many.took), cpuN[rep], many.redis.Top(6), many.rate()/one.rate())
	}
	what := fmt.Sprintf("no-op handler, JOB_BATCH=64, %d jobs", o.noopJobs)
	pn := fmt.Sprintf("PARTITIONS=%d", o.parts)
	return []row{
		{What: what + ": jobs/s, PARTITIONS=1", Vals: ones, Unit: "jobs/s"},
		{What: what + ": jobs/s, " + pn, Vals: manys, Unit: "jobs/s"},
		{What: what + ": " + pn + " ÷ PARTITIONS=1", Vals: ratios, Unit: "x", Target: "≥ 1.0x", OK: func(v float64) bool { return v >= 1 }},
		{What: "  Redis CPU per job (INFO cpu), PARTITIONS=1", Vals: cpu1, Unit: "µs"},
		{What: "  Redis CPU per job (INFO cpu), " + pn, Vals: cpuN, Unit: "µs"},
		{What: "  time in scripts per job (commandstats), PARTITIONS=1", Vals: scr1, Unit: "µs"},
		{What: "  time in scripts per job (commandstats), " + pn, Vals: scrN, Unit: "µs"},
		{What: "  Redis commands per job (commandstats), PARTITIONS=1", Vals: cmd1, Unit: ""},
		{What: "  Redis commands per job (commandstats), " + pn, Vals: cmdN, Unit: ""},
	}, nil
}
