package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
)

// measureIdle: o.replicas replicas with o.idleParts partitions and the
// default timings, idle; Redis commands per second in all, from INFO
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
	g := newGroup(f, o.bin, r, fmt.Sprintf("pb-idle-p%d", o.idleParts), o.idleParts, "LOG_LEVEL=warn")
	// A joiner takes its share after two registry periods (5 s each).
	if err := g.startBalanced(ctx, o.replicas, 2*time.Minute); err != nil {
		return nil, err
	}
	// Its last handovers and their records are done by then.
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
	if err := g.waitBalanced(ctx, 10*time.Second); err != nil {
		return nil, fmt.Errorf("after the windows: %w", err)
	}
	what := fmt.Sprintf("idle fleet, %d replicas, PARTITIONS=%d, default timings", o.replicas, o.idleParts)
	return []row{
		{What: what + ": Redis commands/s in all", Vals: rates, Unit: "/s", Target: "≤ 30/s", OK: func(v float64) bool { return v <= 30 },
			Note: fmt.Sprintf("windows of %s", o.idleWindow)},
		{What: "  of which scripts called (their commands are in the total)", Vals: scripts, Unit: "/s"},
	}, nil
}
