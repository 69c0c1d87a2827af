package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/lockworker/lockworker/internal/fleet"
)

// idleTiming is the daemon's default timing, as the issue asks; everything
// else is the daemon's default too (job poll every 500ms, release notices).
var idleTiming = []string{"LOCK_TTL=15s", "RENEW_INTERVAL=5s", "RETRY_INTERVAL=5s"}

// idleCost is what one idle replica costs over the window.
type idleCost struct {
	role     string
	window   time.Duration
	cpu      time.Duration // user+system CPU time spent in the window
	rss, hwm uint64        // resident memory at the end, and its peak
	commands map[string]int
}

func (c idleCost) total() int {
	n := 0
	for _, v := range c.commands {
		n += v
	}
	return n
}

// measureIdle runs one leader and one follower of the real binary against
// a Redis of their own, lets them idle for o.idle, and reads what each
// spent: CPU and memory from /proc, commands from the MONITOR feed, matched
// by the client name lockworker sets (lockworker-<WORKER_ID>).
func measureIdle(ctx context.Context, f *fleet.Fleet, bin string, o options) ([]idleCost, error) {
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis-idle"})
	if err != nil {
		return nil, err
	}
	defer r.Kill()
	env := func(id string) []string {
		return append([]string{"REDIS_URLS=" + r.URL(), "WORKER_ID=" + id, "LOG_LEVEL=warn"}, idleTiming...)
	}
	leader, err := f.Start(fleet.Spec{Name: "idle-leader", Path: bin, Env: env("idle-leader")})
	if err != nil {
		return nil, err
	}
	defer leader.Kill()
	wait, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := fleet.WaitLeader(wait, []*fleet.Process{leader}, 0); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, leader.Output())
	}
	follower, err := f.Start(fleet.Spec{Name: "idle-follower", Path: bin, Env: env("idle-follower")})
	if err != nil {
		return nil, err
	}
	defer follower.Kill()
	if err := waitState(wait, follower, "waiting_to_acquire_lock"); err != nil {
		return nil, err
	}

	procs := []*fleet.Process{leader, follower}
	before, err := readProcs(procs)
	if err != nil {
		return nil, err
	}
	counter, err := startCounting(ctx, r.Addr(), o)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(o.idle):
	}
	counts, cerr := counter.stop()
	window := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after, err := readProcs(procs)
	if err != nil {
		return nil, errors.Join(err, cerr)
	}
	for _, p := range procs {
		if p.Exited() {
			return nil, fmt.Errorf("%s exited during the idle window: %v\n%s", p.Name, p.Err(), p.Output())
		}
	}
	out := make([]idleCost, len(procs))
	for i, p := range procs {
		out[i] = idleCost{
			role:     strings.TrimPrefix(p.Name, "idle-"),
			window:   window,
			cpu:      after[i].cpu - before[i].cpu,
			rss:      after[i].rss,
			hwm:      after[i].hwm,
			commands: counts["lockworker-"+p.Name],
		}
	}
	return out, cerr
}

// waitState polls /status (before the window: /status itself reads Redis)
// until p reports state.
func waitState(ctx context.Context, p *fleet.Process, state string) error {
	for {
		s, err := p.Status(ctx)
		if err == nil && s.State == state {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not reach %s (last: %q, %v)\n%s", p.Name, state, s.State, err, p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type procSnapshot struct {
	cpu      time.Duration
	rss, hwm uint64
}

func readProcs(procs []*fleet.Process) ([]procSnapshot, error) {
	out := make([]procSnapshot, len(procs))
	for i, p := range procs {
		pr, err := procfs.NewProc(p.PID())
		if err != nil {
			return nil, err
		}
		st, err := pr.Stat()
		if err != nil {
			return nil, err
		}
		status, err := pr.NewStatus()
		if err != nil {
			return nil, err
		}
		out[i] = procSnapshot{
			cpu: time.Duration(st.CPUTime() * float64(time.Second)),
			rss: status.VmRSS,
			hwm: status.VmHWM,
		}
	}
	return out, nil
}

// describe is the idle row's note: memory, CPU, and Redis commands per
// second with the busiest commands named.
func (c idleCost) describe() string {
	secs := c.window.Seconds()
	names := slices.SortedFunc(maps.Keys(c.commands), func(a, b string) int { return c.commands[b] - c.commands[a] })
	parts := []string{"none"}
	if len(names) > 0 {
		parts = parts[:0]
	}
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f/s", n, float64(c.commands[n])/secs))
	}
	return fmt.Sprintf("RSS %.1f MiB (peak %.1f MiB), CPU %s in %s (%.3f%% of a core), %.2f Redis cmd/s: %s",
		float64(c.rss)/(1<<20), float64(c.hwm)/(1<<20), c.cpu.Round(time.Millisecond), c.window.Round(time.Second),
		100*c.cpu.Seconds()/secs, float64(c.total())/secs, strings.Join(parts, ", "))
}
