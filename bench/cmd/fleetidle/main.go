// Command fleetidle measures what the fleet registry and an open dashboard
// add to the Redis load of an idle fleet: three real replicas with the
// default timings and a real redis-server, counted with INFO commandstats
// (every command Redis executes, those run inside Lua scripts included).
//
// Two windows of the same length: the idle fleet alone, then the same
// fleet with one dashboard open (an SSE client on /events of a follower,
// reading every push). The registry's share is what only it sends in an
// idle fleet: SET (the records), ZADD and ZREMRANGEBYSCORE (the index).
// The page's share is the difference between the two windows.
//
//	cd bench && go run ./cmd/fleetidle [-window 60s] [-bin path]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/lockworker/lockworker/internal/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetidle:", err)
		os.Exit(1)
	}
}

// registryCommands are the commands only the registry sends in an idle
// fleet (the lock scripts call SET only when they win the lock).
var registryCommands = []string{"set", "zadd", "zremrangebyscore"}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleetidle", flag.ContinueOnError)
	window := fs.Duration("window", time.Minute, "length of each measured window")
	replicas := fs.Int("replicas", 3, "replicas")
	bin := fs.String("bin", "", "lockworker binary (default: go build ./cmd/lockworker of the parent module)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" {
		dir, err := os.MkdirTemp("", "fleetidle")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if *bin, err = benchkit.BuildDaemon(ctx, dir); err != nil {
			return err
		}
	}
	f := fleet.New(ctx)
	defer f.Close()
	r, procs, err := startFleet(ctx, f, *bin, *replicas)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()

	fmt.Fprintf(stdout, "%d idle replicas (LOCK_TTL=15s RENEW_INTERVAL=5s RETRY_INTERVAL=5s), windows of %s\n\n", *replicas, *window)
	alone, err := measure(ctx, c, *window)
	if err != nil {
		return err
	}
	follower := procs[len(procs)-1]
	events, stopPage, err := openPage(ctx, follower.URL()+"/events")
	if err != nil {
		return err
	}
	// The page's first read is its own, not the idle cost: wait for it.
	for deadline := time.Now().Add(10 * time.Second); events.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	withPage, err := measure(ctx, c, *window)
	stopPage()
	if err != nil {
		return err
	}
	report(stdout, alone, withPage, *window, events.Load())
	return nil
}

// startFleet starts a redis-server and the replicas, and waits until one
// leads and the others wait.
func startFleet(ctx context.Context, f *fleet.Fleet, bin string, n int) (*fleet.Redis, []*fleet.Process, error) {
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, nil, err
	}
	var procs []*fleet.Process
	for i := range n {
		name := fmt.Sprintf("replica-%d", i+1)
		p, err := f.Start(fleet.Spec{Name: name, Path: bin, Env: []string{
			"REDIS_URLS=" + r.URL(), "WORKER_ID=" + name, "LOG_LEVEL=warn",
			"LOCK_TTL=15s", "RENEW_INTERVAL=5s", "RETRY_INTERVAL=5s",
		}})
		if err != nil {
			return nil, nil, err
		}
		procs = append(procs, p)
		wait, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = waitReady(wait, p, i == 0)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w\n%s", name, err, p.Output())
		}
	}
	return r, procs, nil
}

// waitReady polls /status until p leads (first) or waits.
func waitReady(ctx context.Context, p *fleet.Process, first bool) error {
	for {
		s, err := p.Status(ctx)
		if err == nil && ((first && s.Leader) || (!first && s.State == "waiting_to_acquire_lock")) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("not ready in time")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// measure returns the commands Redis executed during window, by command.
func measure(ctx context.Context, c *redis.Client, window time.Duration) (map[string]int64, error) {
	before, err := commandStats(ctx, c)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	after, err := commandStats(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	// The two INFO calls themselves.
	out["info"] -= 1
	return out, nil
}

// commandStats reads INFO commandstats: calls per command.
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

// openPage reads an /events stream as a browser's EventSource would and
// counts its snapshots.
func openPage(ctx context.Context, url string) (*atomic.Int64, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == "event: snapshot" {
				n.Add(1)
			}
		}
	}()
	return &n, func() { cancel(); _ = resp.Body.Close(); <-done }, nil
}

func sum(m map[string]int64, only []string) int64 {
	var n int64
	for k, v := range m {
		if only == nil || slices.Contains(only, k) {
			n += v
		}
	}
	return n
}

func report(w io.Writer, alone, withPage map[string]int64, window time.Duration, events int64) {
	s := window.Seconds()
	rate := func(n int64) string { return fmt.Sprintf("%.2f/s", float64(n)/s) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "command\tidle fleet\twith a page open")
	keys := slices.Sorted(maps.Keys(withPage))
	for _, k := range slices.Sorted(maps.Keys(alone)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k, rate(alone[k]), rate(withPage[k]))
	}
	fmt.Fprintf(tw, "all\t%s\t%s\n", rate(sum(alone, nil)), rate(sum(withPage, nil)))
	tw.Flush()
	fmt.Fprintf(w, "\nthe registry (%s): %s\n", strings.Join(registryCommands, ", "), rate(sum(alone, registryCommands)))
	fmt.Fprintf(w, "an open page: %s more (%d pushes in the window)\n", rate(sum(withPage, nil)-sum(alone, nil)), events)
}
