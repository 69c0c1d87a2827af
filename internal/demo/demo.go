package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
)

// The demo's settings: short, so the whole story takes about ten seconds.
const (
	replicas = 3
	demoJobs = 6
	demoTTL  = 3 * time.Second
)

var demoEnv = []string{
	"LOCK_TTL=3s", "RENEW_INTERVAL=1s", "RETRY_INTERVAL=1s",
	"SHUTDOWN_TIMEOUT=5s", "WORK_DURATION=800ms",
	"LOG_LEVEL=info", "LOG_FORMAT=text", "LOCK_KEY=lockworker:demo",
}

// ErrInterrupted is returned when ctx ended the demo (Ctrl-C); every
// replica and the Redis were stopped.
var ErrInterrupted = errors.New("demo interrupted")

// Config configures Run.
type Config struct {
	// Exe is the lockworker binary the replicas run. Required.
	Exe string
	// Out receives the story. Required.
	Out io.Writer
	// Verbose streams the replicas' logs to Out too.
	Verbose bool
	// Path is the replicas' PATH (they get no other variable of ours).
	Path string
	// Partitions, above 1, tells the story of a fleet sharing that many
	// partitions (PARTITIONS) instead of the one lock's. Default 1.
	Partitions int
}

// Run tells the product's story with real processes: Exe, started as
// replicas, against a redis-server started for the purpose. It stops
// every process it started before it returns.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Exe == "" || cfg.Out == nil {
		return errors.New("demo: Exe and Out are required")
	}
	out := &fleet.LockedWriter{W: cfg.Out}
	d := &demo{ctx: ctx, exe: cfg.Exe, out: out, path: cfg.Path, parts: max(cfg.Partitions, 1), start: time.Now(), fleet: fleet.New(ctx)}
	if cfg.Verbose {
		d.logs = out
	}
	run := d.run
	if d.parts > 1 {
		run = d.runPartitions
	}
	err := run()
	d.shutdown()
	if ctx.Err() != nil {
		d.say("✗ interrupted: every replica and the Redis were stopped")
		return ErrInterrupted
	}
	return err
}

// demo is one run of the story.
type demo struct {
	ctx      context.Context
	exe      string
	out      io.Writer
	logs     io.Writer // replica logs go here with --verbose
	start    time.Time
	fleet    *fleet.Fleet
	path     string // PATH for the replicas, to find nothing but what they exec
	parts    int    // PARTITIONS
	redisURL string
	replicas []*fleet.Process
	timeline []event
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) run() error {
	d.say("lockworker demo: %d replicas compete for one lock in Redis (LOCK_TTL=3s, RENEW_INTERVAL=1s, RETRY_INTERVAL=1s)", replicas)
	d.say("")
	if err := d.startRedis(); err != nil {
		return err
	}
	if err := d.startReplicas(); err != nil {
		return err
	}
	first, err := d.election()
	if err != nil {
		return err
	}
	second, handover, err := d.handover(first)
	if err != nil {
		return err
	}
	third, failover, err := d.failover(first, second)
	if err != nil {
		return err
	}
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

// election: one replica leads, the others wait, and the jobs go in.
func (d *demo) election() (fleet.Member, error) {
	first, err := d.waitLeader(d.replicas, 15*time.Second)
	if err != nil {
		return first, d.noLeader(err)
	}
	d.mark("%s leads (token %d)", first.Name, first.Status.Token)
	if err := d.waitFollowers(first.Process); err != nil {
		return first, err
	}
	d.say("✓ %s leads with fencing token %d; the others wait (state waiting_to_acquire_lock)", first.Name, first.Status.Token)
	if err := d.enqueue(); err != nil {
		return first, err
	}
	if err := d.waitCommitted(first.Process, 1, 15*time.Second); err != nil {
		return first, err
	}
	d.say("  %s is doing heavy work: %s", first.Name, d.queueLine(first.Process))
	d.say("")
	return first, nil
}

// handover: SIGTERM to the leader; the next one leads at once.
func (d *demo) handover(first fleet.Member) (fleet.Member, time.Duration, error) {
	d.say("▸ SIGTERM → %s: it stops its job, releases the lock and tells the others", first.Name)
	t0 := time.Now()
	d.mark("SIGTERM to %s", first.Name)
	if err := first.Terminate(); err != nil {
		return fleet.Member{}, 0, err
	}
	second, err := d.waitLeader(d.others(first.Process), 10*time.Second)
	if err != nil {
		return second, 0, d.noLeader(err)
	}
	took := time.Since(t0)
	d.mark("%s leads (token %d)", second.Name, second.Status.Token)
	d.say("✓ %s leads with token %d, %s after the SIGTERM (graceful handover)", second.Name, second.Status.Token, ms(took))
	if err := d.waitExit(first.Process, 10*time.Second); err != nil {
		return second, took, err
	}
	code := "0"
	if e := first.Err(); e != nil {
		code = e.Error()
	}
	d.mark("%s exited (%s)", first.Name, code)
	d.say("  %s exited with status %s", first.Name, code)
	d.say("")
	return second, took, nil
}

// failover: kill -9 of the leader; the last replica leads once the lease
// ran out and finishes the queue.
func (d *demo) failover(first, second fleet.Member) (fleet.Member, time.Duration, error) {
	rest := d.others(first.Process, second.Process)
	if err := d.waitFollowers(second.Process, rest...); err != nil {
		return fleet.Member{}, 0, err
	}
	d.say("▸ kill -9 → %s: a crash; its lock stays in Redis until the lease (LOCK_TTL 3s) runs out", second.Name)
	t0 := time.Now()
	d.mark("kill -9 of %s", second.Name)
	if err := second.Kill(); err != nil {
		return fleet.Member{}, 0, err
	}
	third, err := d.waitLeader(rest, demoTTL+10*time.Second)
	if err != nil {
		return third, 0, d.noLeader(err)
	}
	took := time.Since(t0)
	d.mark("%s leads (token %d)", third.Name, third.Status.Token)
	d.say("✓ %s leads with token %d, %s after the kill (failover once the lease ran out)", third.Name, third.Status.Token, ms(took))
	if err := d.waitCommitted(third.Process, demoJobs, 30*time.Second); err != nil {
		return third, took, err
	}
	d.mark("all %d jobs committed", demoJobs)
	d.say("  %s finished the queue: %s", third.Name, d.queueLine(third.Process))
	d.say("")
	return third, took, nil
}

func (d *demo) startRedis() error {
	r, err := d.fleet.StartRedis(d.ctx, fleet.RedisSpec{Name: "redis", AppendOnly: true})
	if errors.Is(err, fleet.ErrNoRedisServer) {
		return fmt.Errorf("demo: %w; install it (sudo apt-get install -y redis-server) or run make demo, which does", err)
	}
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.redisURL = r.URL()
	d.mark("redis-server ready")
	d.say("▸ Redis: redis-server on %s (pid %d, appendonly, appendfsync always)", r.Addr(), r.PID())
	return nil
}

func (d *demo) env(extra ...string) []string {
	env := []string{"REDIS_URLS=" + d.redisURL}
	if d.path != "" {
		env = append(env, "PATH="+d.path)
	}
	env = append(env, demoEnv...)
	if d.parts > 1 {
		env = append(env, fmt.Sprint("PARTITIONS=", d.parts))
	}
	return append(env, extra...)
}

func (d *demo) startReplicas() error {
	var names []string
	for i := range replicas {
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
	d.mark("%d replicas started", replicas)
	d.say("▸ replicas: %s", strings.Join(names, ", "))
	return nil
}

// enqueue adds the jobs with `lockworker enqueue`, as a person would.
func (d *demo) enqueue() error {
	for i := range demoJobs {
		if err := d.enqueueOne(fmt.Sprintf("job-%d", i+1)); err != nil {
			return err
		}
	}
	d.mark("%d jobs enqueued", demoJobs)
	d.say("▸ enqueued %d jobs with `lockworker enqueue` (each takes WORK_DURATION=800ms)", demoJobs)
	return nil
}

// enqueueOne runs `lockworker enqueue args...`.
func (d *demo) enqueueOne(args ...string) error {
	p, err := d.fleet.Start(fleet.Spec{Name: "enqueue", Path: d.exe, Args: append([]string{"enqueue"}, args...), Env: d.env()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	err = p.Wait(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("demo: lockworker enqueue: %v\n%s", err, p.Output())
	}
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

func (d *demo) queueLine(p *fleet.Process) string {
	s, err := p.Status(d.ctx)
	if err != nil || s.Queue == nil {
		return "(queue figures unavailable)"
	}
	return fmt.Sprintf("%d of %d jobs committed, %d pending, %d dead letters", s.Queue.Committed, demoJobs, s.Queue.Pending, s.Queue.DeadLettered)
}

// noLeader explains a missing leader with the replicas' last lines.
func (d *demo) noLeader(err error) error {
	if d.ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("demo: no replica became leader: %w%s", err, d.replicaLogs())
}

func (d *demo) replicaLogs() string {
	var b strings.Builder
	for _, p := range d.replicas {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", p.Name, p.LastLines(8))
	}
	return b.String()
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
	if d.ctx.Err() == nil {
		d.say("✓ cleaned up: no replica and no Redis left running")
	}
}
