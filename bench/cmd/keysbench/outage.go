package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
)

// measureOutage: the http handler's server down for o.outage while jobs
// arrive for o.outageKeys keys, o.arrivals a second, the daemon's default
// settings throughout.
func measureOutage(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	srv, err := startJobServer(o.work)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	s := newSide(f, "new", o.bin, r, "kb-outage", o.parts, "JOB_HANDLER=http", "JOB_URL="+srv.url)
	if err := startAll(ctx, o.replicas, s); err != nil {
		return nil, err
	}
	b, err := openBackend(ctx, s)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	retryMax := defaults().JobRetryMax

	var backs, parked, dead, disorder, jobsN []float64
	for rep := range o.reps {
		srv.reset(nil)
		base, err := s.committed(ctx, c)
		if err != nil {
			return nil, err
		}
		stats0, err := b.Queues.Stats(ctx)
		if err != nil {
			return nil, err
		}
		arrive, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var sent int
		var sendErr error
		wg.Go(func() { sent, sendErr = arrivals(arrive, b.Queues, o, "outage"+strconv.Itoa(rep)+"-") })
		step := func(d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
				return nil
			}
		}
		err = step(min(3*time.Second, o.outage)) // jobs flow before the server goes down
		if err == nil {
			err = srv.down()
		}
		if err == nil {
			err = step(o.outage)
		}
		if err == nil {
			err = srv.up()
		}
		back := time.Now()
		stop()
		wg.Wait()
		if err != nil {
			return nil, err
		}
		if sendErr != nil {
			return nil, fmt.Errorf("enqueue: %w", sendErr)
		}
		end, err := s.waitCommitted(ctx, c, base+int64(sent), 50*time.Millisecond, retryMax+3*time.Minute)
		if err != nil {
			return nil, err
		}
		ps, err := b.Queues.Parked(ctx)
		if err != nil {
			return nil, err
		}
		stats, err := b.Queues.Stats(ctx)
		if err != nil {
			return nil, err
		}
		_, reordered, repeated := srv.counts()
		took := end.Sub(back)
		backs, jobsN = append(backs, took.Seconds()), append(jobsN, float64(sent))
		parked, dead = append(parked, float64(len(ps))), append(dead, float64(stats.DeadLettered-stats0.DeadLettered))
		disorder = append(disorder, float64(reordered))
		fmt.Fprintf(progress, "outage %d/%d: %d jobs over %d keys; back → all committed %.1f s; %d parked, %d dead letters, %d out of order, %d run twice, %d retries\n",
			rep+1, o.reps, sent, o.outageKeys, took.Seconds(), len(ps), stats.DeadLettered-stats0.DeadLettered, reordered, repeated, stats.Retries-stats0.Retries)
	}
	what := fmt.Sprintf("http server down %s while %d jobs/s arrive for %d keys, default settings", o.outage, o.arrivals, o.outageKeys)
	bound := (retryMax + 5*time.Second).Seconds()
	return []row{
		{What: what + ": jobs", Vals: jobsN, Unit: ""},
		{What: "  parked keys", Vals: parked, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 }},
		{What: "  dead letters", Vals: dead, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 }},
		{What: "  jobs run out of order within a key", Vals: disorder, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 }},
		{What: "  server back → every job committed", Vals: backs, Unit: "s", Target: fmt.Sprintf("≤ %.0f s", bound),
			OK: func(v float64) bool { return v <= bound }, Note: fmt.Sprintf("JOB_RETRY_MAX %s + 5 s", retryMax)},
	}, nil
}

// arrivals enqueues o.arrivals jobs a second, round robin over
// o.outageKeys keys named prefix<i>, until ctx ends; it returns how many
// it enqueued.
func arrivals(ctx context.Context, r *jobs.Router, o options, prefix string) (int, error) {
	tick := time.NewTicker(time.Second / time.Duration(o.arrivals))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return i, nil
		case <-tick.C:
		}
		it := item{Key: prefix + strconv.Itoa(i%o.outageKeys), Rank: i / o.outageKeys}
		payload, _ := json.Marshal(it)
		if _, err := r.EnqueueMany(context.WithoutCancel(ctx), []jobs.Item{{Key: it.Key, Payload: payload}}); err != nil {
			return i, err
		}
	}
}
