package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
)

// measureIdle: o.replicas replicas with o.idleParts partitions and the
// default settings, o.idleParked keys parked (each holding its failing
// job and one more), idle; Redis commands per second in all, from INFO
// commandstats (every command, those run by scripts too), over o.reps
// windows one after the other.
func measureIdle(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	srv, err := startJobServer(0)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	// A 400 is a permanent failure: the key parks at its first attempt.
	srv.reset(func(it item) int {
		if strings.HasPrefix(it.Key, "parked-") {
			return http.StatusBadRequest
		}
		return 0
	})
	s := newSide(f, "new", o.bin, r, fmt.Sprintf("kb-idle-p%d", o.idleParts), o.idleParts, "JOB_HANDLER=http", "JOB_URL="+srv.url)
	if err := startAll(ctx, o.replicas, s); err != nil {
		return nil, err
	}
	b, err := openBackend(ctx, s)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var items []jobs.Item
	for i := range o.idleParked {
		for rank := range 2 {
			it := item{Key: "parked-" + strconv.Itoa(i), Rank: rank}
			payload, _ := json.Marshal(it)
			items = append(items, jobs.Item{Key: it.Key, Payload: payload})
		}
	}
	for i := 0; i < len(items); i += jobs.MaxBatch {
		if _, err := b.Queues.EnqueueMany(ctx, items[i:min(i+jobs.MaxBatch, len(items))]); err != nil {
			return nil, err
		}
	}
	if err := waitParkedCount(ctx, b.Queues, o.idleParked, 2*time.Minute); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.idleSettle):
	}
	var rates, scripts []float64
	for rep := range o.reps {
		before, err := benchkit.ReadServerStats(ctx, c)
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.idleWindow):
		}
		after, err := benchkit.ReadServerStats(ctx, c)
		if err != nil {
			return nil, err
		}
		d := after.Since(before)
		rate := float64(d.Calls()) / o.idleWindow.Seconds()
		n := d.ScriptCalls()
		rates, scripts = append(rates, rate), append(scripts, float64(n)/o.idleWindow.Seconds())
		fmt.Fprintf(progress, "idle %d/%d: %.2f commands/s (%s in %s)\n", rep+1, o.reps, rate, d.Top(8), o.idleWindow)
	}
	if err := waitParkedCount(ctx, b.Queues, o.idleParked, time.Second); err != nil {
		return nil, fmt.Errorf("after the windows: %w", err)
	}
	what := fmt.Sprintf("idle fleet, %d replicas, PARTITIONS=%d, %d parked keys, default settings", o.replicas, o.idleParts, o.idleParked)
	return []row{
		{What: what + ": Redis commands/s in all", Vals: rates, Unit: "/s", Target: "≤ 30/s", OK: func(v float64) bool { return v <= 30 },
			Note: fmt.Sprintf("windows of %s", o.idleWindow)},
		{What: "  of which scripts called (their commands are in the total)", Vals: scripts, Unit: "/s"},
	}, nil
}

// waitParkedCount waits until exactly n keys are parked.
func waitParkedCount(ctx context.Context, r *jobs.Router, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ps, err := r.Parked(ctx)
		if err == nil && len(ps) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d keys parked, want %d, after %s (last error %v)", len(ps), n, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
