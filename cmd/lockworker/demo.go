package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/lockworker/lockworker/internal/fleet"
)

// The demo's settings: short, so the whole story takes about ten seconds.
const (
	demoReplicas = 3
	demoJobs     = 6
	demoTTL      = 3 * time.Second
)

var demoEnv = []string{
	"LOCK_TTL=3s", "RENEW_INTERVAL=1s", "RETRY_INTERVAL=1s",
	"SHUTDOWN_TIMEOUT=5s", "WORK_DURATION=800ms",
	"LOG_LEVEL=info", "LOG_FORMAT=text", "LOCK_KEY=lockworker:demo",
}

const demoUsage = `usage: lockworker demo [--verbose] [--redis auto|server|embedded]

Starts a Redis of its own and 3 replicas on free loopback ports, shows who
leads, hands over on SIGTERM, fails over after kill -9, and stops everything.
  --verbose  stream the replicas' logs
  --redis    auto (default): redis-server from PATH, else an embedded one;
             server: redis-server only; embedded: the embedded one only`

// runDemo tells the product's story with real processes: this binary,
// re-executed as replicas, against a Redis started for the purpose.
func runDemo(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	verbose := fs.Bool("verbose", false, "stream the replicas' logs")
	redisMode := fs.String("redis", "auto", "auto, server or embedded")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		_, err = fmt.Fprintln(stdout, demoUsage)
		return err
	}
	if err != nil || fs.NArg() > 0 {
		return usageError("demo: bad arguments\n%s", demoUsage)
	}
	if m := *redisMode; m != "auto" && m != "server" && m != "embedded" {
		return usageError("demo: --redis must be auto, server or embedded, got %q", m)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find this binary: %w", err)
	}
	out := &fleet.LockedWriter{W: stdout}
	d := &demo{ctx: ctx, exe: exe, out: out, start: time.Now(), fleet: fleet.New(ctx)}
	if *verbose {
		d.logs = out
	}
	err = d.run(*redisMode)
	d.shutdown()
	if ctx.Err() != nil {
		d.say("✗ interrupted: every replica and the Redis were stopped")
		return &exitError{code: 130, err: errors.New("demo interrupted")}
	}
	return err
}

// demo is one run of the story.
type demo struct {
	ctx      context.Context
	exe      string
	out      *fleet.LockedWriter
	logs     io.Writer // replica logs go here with --verbose
	start    time.Time
	fleet    *fleet.Fleet
	embedded *miniredis.Miniredis
	redisURL string
	replicas []*fleet.Process
	timeline []event
}

type event struct {
	at   time.Duration
	what string
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) mark(format string, args ...any) {
	d.timeline = append(d.timeline, event{at: time.Since(d.start), what: fmt.Sprintf(format, args...)})
}

func (d *demo) run(redisMode string) error {
	d.say("lockworker demo: %d replicas compete for one lock in Redis (LOCK_TTL=3s, RENEW_INTERVAL=1s, RETRY_INTERVAL=1s)", demoReplicas)
	d.say("")
	if err := d.startRedis(redisMode); err != nil {
		return err
	}
	if err := d.startReplicas(); err != nil {
		return err
	}

	// 1. Election.
	first, err := d.waitLeader(d.replicas, 15*time.Second)
	if err != nil {
		return d.noLeader(err)
	}
	d.mark("%s leads (token %d)", first.Name, first.Status.Token)
	if err := d.waitFollowers(first.Process); err != nil {
		return err
	}
	d.say("✓ %s leads with fencing token %d; the others wait (state waiting_to_acquire_lock)", first.Name, first.Status.Token)
	if err := d.enqueue(); err != nil {
		return err
	}
	if err := d.waitCommitted(first.Process, 1, 15*time.Second); err != nil {
		return err
	}
	d.say("  %s is doing heavy work: %s", first.Name, d.queueLine(first.Process))
	d.say("")

	// 2. Graceful handover.
	d.say("▸ SIGTERM → %s: it stops its job, releases the lock and tells the others", first.Name)
	t0 := time.Now()
	d.mark("SIGTERM to %s", first.Name)
	if err := first.Terminate(); err != nil {
		return err
	}
	second, err := d.waitLeader(d.others(first.Process), 10*time.Second)
	if err != nil {
		return d.noLeader(err)
	}
	handover := time.Since(t0)
	d.mark("%s leads (token %d)", second.Name, second.Status.Token)
	d.say("✓ %s leads with token %d, %s after the SIGTERM (graceful handover)", second.Name, second.Status.Token, ms(handover))
	if err := d.waitExit(first.Process, 10*time.Second); err != nil {
		return err
	}
	code := "0"
	if e := first.Err(); e != nil {
		code = e.Error()
	}
	d.mark("%s exited (%s)", first.Name, code)
	d.say("  %s exited with status %s", first.Name, code)
	d.say("")

	// 3. Crash failover.
	rest := d.others(first.Process, second.Process)
	if err := d.waitFollowers(second.Process, rest...); err != nil {
		return err
	}
	d.say("▸ kill -9 → %s: a crash; its lock stays in Redis until the lease (LOCK_TTL 3s) runs out", second.Name)
	t0 = time.Now()
	d.mark("kill -9 of %s", second.Name)
	if err := second.Kill(); err != nil {
		return err
	}
	third, err := d.waitLeader(rest, demoTTL+10*time.Second)
	if err != nil {
		return d.noLeader(err)
	}
	failover := time.Since(t0)
	d.mark("%s leads (token %d)", third.Name, third.Status.Token)
	d.say("✓ %s leads with token %d, %s after the kill (failover once the lease ran out)", third.Name, third.Status.Token, ms(failover))
	if err := d.waitCommitted(third.Process, demoJobs, 30*time.Second); err != nil {
		return err
	}
	d.mark("all %d jobs committed", demoJobs)
	d.say("  %s finished the queue: %s", third.Name, d.queueLine(third.Process))
	d.say("")

	// 4. The end.
	d.say("▸ SIGTERM → %s", third.Name)
	_ = third.Terminate()
	if err := d.waitExit(third.Process, 10*time.Second); err != nil {
		return err
	}
	d.mark("%s exited", third.Name)
	d.say("")
	d.printTimeline(handover, failover, first.Status.Token, second.Status.Token, third.Status.Token)
	return nil
}

func (d *demo) startRedis(mode string) error {
	if mode != "embedded" {
		r, err := d.fleet.StartRedis(d.ctx, fleet.RedisSpec{Name: "redis", AppendOnly: true})
		switch {
		case err == nil:
			d.redisURL = r.URL()
			d.mark("redis-server ready")
			d.say("▸ Redis: redis-server on %s (pid %d, appendonly, appendfsync always)", r.Addr(), r.PID())
			return nil
		case !errors.Is(err, fleet.ErrNoRedisServer) || mode == "server":
			return fmt.Errorf("demo: %w", err)
		}
		d.say("  redis-server not found in PATH: using the embedded Redis (miniredis) instead")
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // TTLs follow the wall clock, as in a real Redis
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return fmt.Errorf("demo: start the embedded Redis: %w", err)
	}
	d.embedded = m
	d.redisURL = "redis://" + m.Addr()
	d.mark("embedded Redis ready")
	d.say("▸ Redis: embedded miniredis on %s (in this process; not for production)", m.Addr())
	return nil
}

func (d *demo) env(extra ...string) []string {
	env := []string{"REDIS_URLS=" + d.redisURL}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	env = append(env, demoEnv...)
	return append(env, extra...)
}

func (d *demo) startReplicas() error {
	var names []string
	for i := range demoReplicas {
		name := fmt.Sprintf("worker-%d", i+1)
		spec := fleet.Spec{Name: name, Path: d.exe, Env: d.env("WORKER_ID=" + name)}
		if d.logs != nil {
			spec.Output = &prefixWriter{prefix: fmt.Sprintf("    │ %s │ ", name), w: d.logs}
		}
		p, err := d.fleet.Start(spec)
		if err != nil {
			return err
		}
		d.replicas = append(d.replicas, p)
		names = append(names, fmt.Sprintf("%s (pid %d, :%d)", name, p.PID(), p.Port))
	}
	d.mark("%d replicas started", demoReplicas)
	d.say("▸ replicas: %s", strings.Join(names, ", "))
	return nil
}

// enqueue adds the jobs with `lockworker enqueue`, as a person would.
func (d *demo) enqueue() error {
	for i := range demoJobs {
		p, err := d.fleet.Start(fleet.Spec{Name: "enqueue", Path: d.exe, Args: []string{"enqueue", fmt.Sprintf("job-%d", i+1)}, Env: d.env()})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		err = p.Wait(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("demo: lockworker enqueue: %v\n%s", err, p.Output())
		}
	}
	d.mark("%d jobs enqueued", demoJobs)
	d.say("▸ enqueued %d jobs with `lockworker enqueue` (each takes WORK_DURATION=800ms)", demoJobs)
	return nil
}

func (d *demo) others(not ...*fleet.Process) []*fleet.Process {
	var out []*fleet.Process
	for _, p := range d.replicas {
		skip := p.Exited()
		for _, n := range not {
			skip = skip || p == n
		}
		if !skip {
			out = append(out, p)
		}
	}
	return out
}

func (d *demo) waitLeader(procs []*fleet.Process, limit time.Duration) (fleet.Member, error) {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	return fleet.WaitLeader(ctx, procs, 5*time.Millisecond)
}

// waitFollowers waits until every replica but the leader is waiting for
// the lock, so what is measured next is the handover, not a start-up.
func (d *demo) waitFollowers(leader *fleet.Process, procs ...*fleet.Process) error {
	if procs == nil {
		procs = d.others(leader)
	}
	return d.poll(10*time.Second, "the other replicas to wait for the lock", func() bool {
		for _, p := range procs {
			s, err := p.Status(d.ctx)
			if err != nil || s.Leader || s.State != "waiting_to_acquire_lock" {
				return false
			}
		}
		return true
	})
}

func (d *demo) waitCommitted(p *fleet.Process, n int64, limit time.Duration) error {
	return d.poll(limit, fmt.Sprintf("%d committed jobs", n), func() bool {
		s, err := p.Status(d.ctx)
		return err == nil && s.Queue != nil && s.Queue.Committed >= n
	})
}

func (d *demo) waitExit(p *fleet.Process, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("demo: %s did not exit within %s\n%s", p.Name, limit, tail(p.Output(), 15))
	}
}

func (d *demo) poll(limit time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: waited %s for %s%s", limit, what, d.replicaLogs())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func (d *demo) queueLine(p *fleet.Process) string {
	s, err := p.Status(d.ctx)
	if err != nil || s.Queue == nil {
		return "(queue figures unavailable)"
	}
	return fmt.Sprintf("%d of %d jobs committed, %d pending, %d dead letters", s.Queue.Committed, demoJobs, s.Queue.Pending, s.Queue.DeadLettered)
}

// noLeader explains a missing leader; with the embedded Redis the likely
// cause is a command or script it does not support.
func (d *demo) noLeader(err error) error {
	if d.ctx.Err() != nil {
		return err
	}
	msg := fmt.Sprintf("demo: no replica became leader: %v%s", err, d.replicaLogs())
	if d.embedded != nil {
		msg += "\n\nThe embedded Redis (miniredis) could not run lockworker's lock scripts.\n" +
			"Install a real Redis and run the demo again:\n" +
			"  sudo apt-get install -y redis-server   (or: make demo, which installs it)"
	}
	return errors.New(msg)
}

func (d *demo) replicaLogs() string {
	var b strings.Builder
	for _, p := range d.replicas {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", p.Name, tail(p.Output(), 8))
	}
	return b.String()
}

func (d *demo) printTimeline(handover, failover time.Duration, tokens ...int64) {
	d.say("timeline (seconds since the demo started)")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	for _, e := range d.timeline {
		fmt.Fprintf(tw, "  %7.3fs\t%s\n", e.at.Seconds(), e.what)
	}
	_ = tw.Flush()
	d.say("")
	d.say("handover after SIGTERM: %-8s (the leader released the lock and published a notice)", ms(handover))
	d.say("failover after kill -9: %-8s (bounded by LOCK_TTL=%s: nobody can take a lease that may be live)", ms(failover), demoTTL)
	d.say("fencing tokens: %d → %d → %d (each new leader's token is higher, so a late write by an old one is rejected)", tokens[0], tokens[1], tokens[2])
}

// shutdown stops the replicas that are left, then the Redis, and waits
// until every process is reaped.
func (d *demo) shutdown() {
	for _, p := range d.others() {
		_ = p.Terminate()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	for _, p := range d.replicas {
		_ = p.Wait(ctx)
	}
	cancel()
	_ = d.fleet.Close()
	if d.embedded != nil {
		d.embedded.Close()
	}
	if d.ctx.Err() == nil {
		d.say("✓ cleaned up: no replica and no Redis left running")
	}
}

func ms(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(10 * time.Millisecond).String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// prefixWriter writes each complete line with a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	r := bufio.NewReader(&p.buf)
	var rest []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			rest = line
			break
		}
		if _, err := io.WriteString(p.w, p.prefix+string(line)); err != nil {
			return 0, err
		}
	}
	p.buf.Reset()
	p.buf.Write(rest)
	return len(b), nil
}
