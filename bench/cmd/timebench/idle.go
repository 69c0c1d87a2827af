package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/schedule"
)

// The idle part's phases, one after the other on one fleet: each adds to
// the one before.
var idlePhases = []string{"idle fleet", "+ delayed jobs due in an hour", "+ schedules"}

// window is one measured window: commands by name, and the deliveries
// (schedule ticks run) seen in it.
type window struct {
	cmds      map[string]int64
	ticks     int
	sent, lua int64 // MONITOR: commands clients sent, and scripts ran
}

func (w window) all() int64 {
	var n int64
	for _, v := range w.cmds {
		n += v
	}
	return n
}

// measureIdle: o.replicas replicas with o.parts partitions and the
// default timings; o.reps windows of the idle fleet, then o.reps with
// o.idleJobs delayed jobs due in an hour, then o.reps with o.schedules
// schedules every o.every as well. Every command Redis executed in a
// window is counted (INFO commandstats), as cmd/fleetidle counts.
func measureIdle(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	rec, err := startRecorder()
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	env := []string{"REDIS_URLS=" + r.URL(), "JOB_HANDLER=http", "JOB_URL=" + rec.url, "LOG_LEVEL=warn"}
	timings := "default timings"
	if o.idleFast {
		env, timings = append(env, fastTimings...), "short timings"
	}
	// A joiner takes its share after two registry periods (5 s each).
	g, err := startGroup(ctx, f, o.bin, "tb-idle", o.replicas, o.parts, env, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	b, err := g.open()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := sleep(ctx, o.idleSettle); err != nil {
		return nil, err
	}

	windows := make([][]window, len(idlePhases))
	for ph, name := range idlePhases {
		switch ph {
		case 1:
			if err := addDelayed(ctx, b.Queues, o.idleJobs, o.keys); err != nil {
				return nil, err
			}
		case 2:
			if err := addSchedules(ctx, b.Queues, o.schedules, o.every); err != nil {
				return nil, err
			}
		}
		for rep := range o.reps {
			w, err := measureWindow(ctx, c, rec, o)
			if err != nil {
				return nil, err
			}
			windows[ph] = append(windows[ph], w)
			fmt.Fprintf(progress, "idle, %s %d/%d: %.2f commands/s (MONITOR: %.2f/s sent, %.2f/s in scripts), %d ticks run (%s)\n", name, rep+1, o.reps,
				float64(w.all())/o.idleWindow.Seconds(), float64(w.sent)/o.idleWindow.Seconds(), float64(w.lua)/o.idleWindow.Seconds(), w.ticks, top(w.cmds, 10))
		}
	}
	if err := g.waitBalanced(ctx, 10*time.Second); err != nil {
		return nil, fmt.Errorf("after the windows: %w", err)
	}
	delayed, err := b.Queues.Delayed(ctx, 0)
	if err != nil {
		return nil, err
	}
	if len(delayed) != o.idleJobs {
		return nil, fmt.Errorf("%d delayed jobs left of %d due in an hour", len(delayed), o.idleJobs)
	}
	for _, w := range windows[0] {
		fmt.Fprintf(progress, "idle: the idle fleet's commands: %s\n", top(w.cmds, 0))
	}
	for _, w := range windows[2] {
		fmt.Fprintf(progress, "idle: added by the delayed jobs and schedules: %s\n", top(diff(w.cmds, windows[0][0].cmds), 0))
	}

	s := o.idleWindow.Seconds()
	rate := func(ws []window) []float64 {
		out := make([]float64, len(ws))
		for i, w := range ws {
			out[i] = float64(w.all()) / s
		}
		return out
	}
	added := func(ph int) []float64 {
		out := make([]float64, o.reps)
		for i := range out {
			out[i] = float64(windows[ph][i].all()-windows[0][i].all()) / s / float64(o.replicas)
		}
		return out
	}
	addedSent := func(ph int) []float64 {
		out := make([]float64, o.reps)
		for i := range out {
			out[i] = float64(windows[ph][i].sent-windows[0][i].sent) / s / float64(o.replicas)
		}
		return out
	}
	sentRate := func(ws []window) []float64 {
		out := make([]float64, len(ws))
		for i, w := range ws {
			out[i] = float64(w.sent) / s
		}
		return out
	}
	ticks := make([]float64, o.reps)
	for i, w := range windows[2] {
		ticks[i] = float64(w.ticks)
	}
	within := func(v float64) bool { return v <= 3 }
	what := fmt.Sprintf("idle: %d replicas, PARTITIONS=%d, %s, windows of %s", o.replicas, o.parts, timings, o.idleWindow)
	return []row{
		{What: what + ": Redis commands/s, idle fleet", Vals: rate(windows[0]), Unit: "/s"},
		{What: fmt.Sprintf("  with %s delayed jobs due in an hour", benchkit.Commas(strconv.Itoa(o.idleJobs))), Vals: rate(windows[1]), Unit: "/s"},
		{What: fmt.Sprintf("  with those and %d schedules every %s", o.schedules, o.every), Vals: rate(windows[2]), Unit: "/s"},
		{What: "  added per replica by the delayed jobs", Vals: added(1), Unit: "/s", Target: "≤ 3/s", OK: within,
			Note: "window i minus idle window i"},
		{What: "  added per replica by the delayed jobs and schedules", Vals: added(2), Unit: "/s", Target: "≤ 3/s", OK: within,
			Note: "the ticks' jobs run included"},
		{What: "  commands sent by clients (MONITOR; a script call is one), idle fleet", Vals: sentRate(windows[0]), Unit: "/s"},
		{What: "  the same with the delayed jobs and schedules", Vals: sentRate(windows[2]), Unit: "/s"},
		{What: "  commands sent, added per replica by the delayed jobs", Vals: addedSent(1), Unit: "/s", Target: "≤ 3/s", OK: within},
		{What: "  commands sent, added per replica by the delayed jobs and schedules", Vals: addedSent(2), Unit: "/s", Target: "≤ 3/s", OK: within},
		{What: "  schedule ticks run in a window", Vals: ticks, Note: fmt.Sprintf("%d expected", int64(o.idleWindow/o.every)*int64(o.schedules))},
	}, nil
}

// measureWindow counts what Redis executes in one window. When the
// window is a whole number of schedule periods it starts half a period
// after a tick (every schedule ticks at the multiples of the period), so
// each window holds as many ticks as the next.
func measureWindow(ctx context.Context, c *redis.Client, rec *recorder, o options) (window, error) {
	if o.idleWindow%o.every == 0 {
		// The window before ends where this one should start: a few
		// milliseconds past it still counts as the start.
		now := time.Now()
		since := time.Duration(now.UnixNano()) % o.every // since the last tick
		start := now.Add(-since + o.every/2)
		if now.Sub(start) > o.every/10 {
			start = start.Add(o.every)
		}
		if err := sleep(ctx, time.Until(start)); err != nil {
			return window{}, err
		}
	}
	mon, err := startMonitor(ctx, c.Options().Addr)
	if err != nil {
		return window{}, err
	}
	before, err := commandStats(ctx, c)
	if err != nil {
		mon.stop()
		return window{}, err
	}
	runs := rec.count()
	if err := sleep(ctx, o.idleWindow); err != nil {
		mon.stop()
		return window{}, err
	}
	after, err := commandStats(ctx, c)
	sent, lua := mon.stop()
	if err != nil {
		return window{}, err
	}
	w := window{cmds: diff(after, before), ticks: rec.count() - runs, sent: sent, lua: lua}
	w.cmds["info"]-- // the INFO that read before
	if w.cmds["info"] <= 0 {
		delete(w.cmds, "info")
	}
	return w, nil
}

// addDelayed enqueues n jobs over keys keys, due an hour from now.
func addDelayed(ctx context.Context, router *jobs.Router, n, keys int) error {
	due := time.Now().Add(time.Hour)
	items := make([]jobs.Item, n)
	for i := range items {
		items[i] = jobs.Item{Key: fmt.Sprintf("later-%d", i%keys), NotBefore: due.Add(time.Duration(i) * time.Millisecond),
			Payload: []byte("later")}
	}
	for i := 0; i < len(items); i += jobs.MaxBatch {
		if _, err := router.EnqueueItems(ctx, items[i:min(i+jobs.MaxBatch, len(items))]); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	return nil
}

// addSchedules adds n schedules ticking every period, keyless.
func addSchedules(ctx context.Context, router *jobs.Router, n int, every time.Duration) error {
	for i := range n {
		s := jobs.Schedule{Name: fmt.Sprintf("every-%d", i), When: schedule.When{Every: every}, Payload: []byte("tick")}
		if err := router.AddSchedule(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// commandStats reads INFO commandstats: calls per command, those run
// inside scripts included.
func commandStats(ctx context.Context, c *redis.Client) (map[string]int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			continue
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = v
	}
	return out, nil
}

// diff is after − before, by command, leaving out what did not grow.
func diff(after, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// top names the n commands with the most calls (n <= 0: all), with them.
func top(m map[string]int64, n int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return int(m[b] - m[a]) })
	if n > 0 {
		keys = keys[:min(n, len(keys))]
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+strconv.FormatInt(m[k], 10))
	}
	return strings.Join(parts, ", ")
}
