package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redisopt"
)

// keys names the keys of the LOCK_KEY the replicas run with (the
// daemon's default).
var keys = keyspace.MustNew("lockworker:leader")

// ClusterConfig describes the processes of a run.
type ClusterConfig struct {
	// Binary is the lockworker executable. Required.
	Binary string
	// Writer is the job command: cmd/chaoswriter, see RunWriter. Required.
	Writer string
	// Workers is the number of replicas. Default 3.
	Workers int
	// Nodes is the number of Redis nodes: 1 (single node) or 3 (Redlock).
	// Node 0, the epoch authority and queue, always runs with AOF
	// (appendfsync always); the others run without persistence. Default 3.
	Nodes int
	// TTL, Renew and Retry are LOCK_TTL, RENEW_INTERVAL and RETRY_INTERVAL.
	// Defaults 1s, 300ms, 250ms.
	TTL, Renew, Retry time.Duration
	// NodeTimeout is REDIS_NODE_TIMEOUT. Default TTL/4.
	NodeTimeout time.Duration
	// Work is how long each job works before its write. Default 20ms.
	Work time.Duration
	// Batch is JOB_BATCH. Default: the daemon's (jobs.DefaultBatch).
	Batch int
	// LogDir, if set, receives each process's output (<name>.log) on
	// Close. Replicas log at debug level.
	LogDir string
	// Partitions is PARTITIONS. Default 1.
	Partitions int
	// Concurrency is JOB_CONCURRENCY. Default 8.
	Concurrency int
	// MaxAttempts is JOB_MAX_ATTEMPTS. Default 100000: interrupted
	// deliveries count as attempts, and a job must not park merely
	// because faults kept hitting it; Run lowers it so poisoned jobs park.
	MaxAttempts int
}

// Cluster is Redis nodes, replicas and the proxies between them: every
// replica reaches every node through a toxiproxy proxy of its own, so one
// link can be cut or slowed and a node can restart on a new port while the
// replicas keep their REDIS_URLS.
type Cluster struct {
	cfg   ClusterConfig
	coord *Coordinator
	fleet *fleet.Fleet
	tox   *toxiproxy.ApiServer
	dir   string
	nodes []*node
	slots []*slot

	// nodesMu is held for reading while the node clients are used from
	// another goroutine (the enqueuer) and for writing while a node is
	// down or its client replaced, so no enqueue lands in a restart.
	nodesMu sync.RWMutex
}

type node struct {
	idx    int
	aof    bool
	dir    string
	redis  *fleet.Redis
	client *redis.Client
}

type slot struct {
	idx     int
	gen     int
	name    string
	proc    *fleet.Process
	paused  bool
	super   int                // the paused writer's supervisor (package guest), 0 if none
	proxies []*toxiproxy.Proxy // by node
}

func (c *ClusterConfig) defaults() error {
	if c.Binary == "" || c.Writer == "" {
		return errors.New("chaos: Binary and Writer are required")
	}
	if c.Workers == 0 {
		c.Workers = 3
	}
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.Nodes != 1 && c.Nodes != 3 {
		return fmt.Errorf("chaos: Nodes must be 1 or 3, got %d", c.Nodes)
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
	if c.Renew == 0 {
		c.Renew = 300 * time.Millisecond
	}
	if c.Retry == 0 {
		c.Retry = 250 * time.Millisecond
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = c.TTL / 4
	}
	if c.Work == 0 {
		c.Work = 20 * time.Millisecond
	}
	if c.Batch == 0 {
		c.Batch = jobs.DefaultBatch
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 100000
	}
	return nil
}

// StartCluster starts the nodes, the proxies and the replicas. Close stops
// them all, also on error.
func StartCluster(ctx context.Context, cfg ClusterConfig, coord *Coordinator) (_ *Cluster, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockworker-chaos-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:   cfg,
		coord: coord,
		fleet: fleet.New(context.WithoutCancel(ctx)),
		tox:   toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		dir:   dir,
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	for i := range cfg.Nodes {
		n := &node{idx: i, aof: i == 0, dir: filepath.Join(dir, "redis"+strconv.Itoa(i))}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		if err := c.startNode(ctx, n); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Workers {
		s := &slot{idx: i}
		for _, n := range c.nodes {
			p := toxiproxy.NewProxy(c.tox, fmt.Sprintf("w%d-r%d", i, n.idx), "127.0.0.1:0", n.redis.Addr())
			if err := p.Start(); err != nil {
				return nil, fmt.Errorf("chaos: proxy: %w", err)
			}
			s.proxies = append(s.proxies, p)
		}
		c.slots = append(c.slots, s)
		if err := c.startWorker(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) startNode(ctx context.Context, n *node) error {
	r, err := c.fleet.StartRedis(ctx, fleet.RedisSpec{Name: "redis" + strconv.Itoa(n.idx), Dir: n.dir, AppendOnly: n.aof})
	if err != nil {
		return err
	}
	n.redis = r
	if n.client != nil {
		_ = n.client.Close()
	}
	n.client = redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: r.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	return nil
}

func (c *Cluster) startWorker(s *slot) error {
	s.gen++
	s.name = fmt.Sprintf("w%d.%d", s.idx, s.gen)
	urls := make([]string, len(s.proxies))
	for i, p := range s.proxies {
		urls[i] = "redis://" + p.Listen
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"WORKER_ID=" + s.name,
		"REDIS_URLS=" + strings.Join(urls, ","),
		"LOCK_TTL=" + c.cfg.TTL.String(),
		"RENEW_INTERVAL=" + c.cfg.Renew.String(),
		"RETRY_INTERVAL=" + c.cfg.Retry.String(),
		"REDIS_NODE_TIMEOUT=" + c.cfg.NodeTimeout.String(),
		"SHUTDOWN_TIMEOUT=4s",
		"JOB_HANDLER=exec",
		"JOB_COMMAND=" + c.cfg.Writer,
		// A key's retries keep the pace the suite's liveness figures
		// were taken at.
		"JOB_MAX_ATTEMPTS=" + strconv.Itoa(c.cfg.MaxAttempts),
		"JOB_RETRY_BASE=100ms", "JOB_RETRY_MAX=5s",
		"JOB_CONCURRENCY=" + strconv.Itoa(c.cfg.Concurrency),
		"JOB_BATCH=" + strconv.Itoa(c.cfg.Batch),
		"PARTITIONS=" + strconv.Itoa(c.cfg.Partitions),
		"LOG_LEVEL=debug",
		StoreEnv + "=" + c.coord.URL(),
		WorkEnv + "=" + c.cfg.Work.String(),
		// The writer is a guest with a clean environment: name what it reads.
		"JOB_ENV=" + StoreEnv + "," + WorkEnv,
	}
	p, err := c.fleet.Start(fleet.Spec{Name: s.name, Path: c.cfg.Binary, Env: env})
	if err != nil {
		return err
	}
	s.proc, s.paused = p, false
	return nil
}

// CLI runs a lockworker command (skip, retry, ...) as an operator would,
// against the nodes directly; hold nodesMu for reading while it runs.
func (c *Cluster) CLI(ctx context.Context, args ...string) (string, error) {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = "redis://" + n.redis.Addr()
	}
	cmd := exec.CommandContext(ctx, c.cfg.Binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "USER=chaos", "REDIS_URLS=" + strings.Join(urls, ","),
		"PARTITIONS=" + strconv.Itoa(c.cfg.Partitions), "REDIS_NODE_TIMEOUT=" + c.cfg.NodeTimeout.String()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("chaos: lockworker %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Queue returns a queue client on node 0, for enqueueing and stats; hold
// nodesMu for reading while using it.
func (c *Cluster) Queue() (*jobs.Queue, error) {
	return jobs.New(jobs.Config{
		Client: c.nodes[0].client,
		Keys:   keys.Lease(),
	})
}

// Router returns the enqueuer's view of every partition's queue on node
// 0 (with one partition, Queue's); hold nodesMu for reading while using it.
func (c *Cluster) Router() (*jobs.Router, error) {
	queues := make([]*jobs.Queue, c.cfg.Partitions)
	for p := range queues {
		q, err := jobs.New(jobs.Config{Client: c.nodes[0].client, Keys: keys.Partition(p, c.cfg.Partitions), Partition: p,
			Partitions: c.cfg.Partitions})
		if err != nil {
			return nil, err
		}
		queues[p] = q
	}
	return jobs.NewRouter(queues, c.nodes[0].client, true)
}

// Leader returns the running, unpaused replica that says it leads with the
// highest token, or nil. With partitions: the one that leads the most.
func (c *Cluster) Leader(ctx context.Context) (*slot, int64) {
	var best lead
	n := map[*slot]int{} // partitions led, by replica
	for _, l := range c.leads(ctx) {
		n[l.s]++
		if best.s == nil || (c.cfg.Partitions == 1 && l.token > best.token) || n[l.s] > n[best.s] {
			best = l
		}
	}
	return best.s, best.token
}

// lead is one partition's leadership as its replica reports it in
// /status (partition 0 without partitions).
type lead struct {
	s     *slot
	part  int
	token int64
}

// leads lists the leaderships the running, unpaused replicas report.
func (c *Cluster) leads(ctx context.Context) []lead {
	var out []lead
	for _, s := range c.slots {
		if s.paused || s.proc.Exited() {
			continue
		}
		st, err := s.proc.Status(ctx)
		if err != nil || !st.Leader {
			continue
		}
		if c.cfg.Partitions == 1 {
			out = append(out, lead{s: s, token: st.Token})
			continue
		}
		for _, l := range st.Leads {
			out = append(out, lead{s: s, part: l.Partition, token: l.Token})
		}
	}
	return out
}

// waitLead polls leads until there is one or limit passes, and picks one:
// without partitions the leader's (the highest token), with them one
// partition's at random.
func (c *Cluster) waitLead(ctx context.Context, limit time.Duration, rng interface{ IntN(int) int }) (lead, bool) {
	deadline := time.Now().Add(limit)
	for {
		ls := c.leads(ctx)
		if len(ls) > 0 {
			if c.cfg.Partitions > 1 {
				return ls[rng.IntN(len(ls))], true
			}
			best := ls[0]
			for _, l := range ls[1:] {
				if l.token > best.token {
					best = l
				}
			}
			return best, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return lead{}, false
		}
		backoff.Sleep(ctx, 20*time.Millisecond)
	}
}

// SignalLeader sends sig to the current leader (see Leader) and returns
// its worker ID; for tests that stop or kill a leader at a chosen moment.
func (c *Cluster) SignalLeader(ctx context.Context, sig syscall.Signal) (string, error) {
	s, _ := c.WaitLeader(ctx, 10*time.Second)
	if s == nil {
		return "", errors.New("chaos: no leader to signal")
	}
	return s.name, s.proc.Signal(sig)
}

// WaitLeader polls Leader until one answers or limit passes.
func (c *Cluster) WaitLeader(ctx context.Context, limit time.Duration) (*slot, int64) {
	deadline := time.Now().Add(limit)
	for {
		if s, tok := c.Leader(ctx); s != nil || time.Now().After(deadline) || ctx.Err() != nil {
			return s, tok
		}
		backoff.Sleep(ctx, 20*time.Millisecond)
	}
}

// pause stops a replica (and, if pid > 0, its job's writer).
func (c *Cluster) pause(s *slot, pid int) error {
	if err := s.proc.Pause(); err != nil {
		return err
	}
	s.paused = true
	stopped := []int{s.proc.PID()}
	if pid > 0 {
		// The writer runs under a supervisor (package guest) that would
		// kill it at the lease deadline: a frozen host stops that too, or
		// the late write this fault exists for could never happen.
		if ppid := parentOf(pid); ppid > 0 && ppid != s.proc.PID() {
			if err := syscall.Kill(ppid, syscall.SIGSTOP); err == nil {
				s.super = ppid
				stopped = append(stopped, ppid)
			}
		}
		// ESRCH: the writer is already gone, stopped by its replica, which
		// lost its lease on its own (say, to the previous fault). Nothing
		// is left to hold; the fault simply does not bite.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		stopped = append(stopped, pid)
	}
	// kill(2) returns before every thread has stopped; a thread still
	// running could read a reply released right after. Wait until all are.
	for _, id := range stopped {
		if !fleet.WaitStopped(id, 5*time.Second) && alive(id) {
			return fmt.Errorf("chaos: pid %d did not stop within 5s", id)
		}
	}
	return nil
}

// resume wakes the replica, then the writer's supervisor, which then finds
// the lease deadline passed and kills what is left of the writer.
func (c *Cluster) resume(s *slot) error {
	s.paused = false
	err := s.proc.Resume()
	if s.super > 0 {
		_ = syscall.Kill(s.super, syscall.SIGCONT)
		s.super = 0
	}
	return err
}

// parentOf is pid's parent process ID, 0 when it cannot be read.
func parentOf(pid int) int {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(st), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// saveLogs writes each replica's captured output (the last 4 MiB) and each
// node's log to LogDir.
func (c *Cluster) saveLogs() error {
	if c.cfg.LogDir == "" {
		return nil
	}
	var errs []error
	for _, p := range c.fleet.Processes() {
		errs = append(errs, os.WriteFile(filepath.Join(c.cfg.LogDir, p.Name+".log"), []byte(p.Output()), 0o600))
	}
	for _, n := range c.nodes {
		if n.redis != nil {
			errs = append(errs, os.WriteFile(filepath.Join(c.cfg.LogDir, fmt.Sprintf("redis%d-server.log", n.idx)), []byte(n.redis.Log()), 0o600))
		}
	}
	return errors.Join(errs...)
}

// StopWorkers sends SIGTERM to every replica and waits (bounded) for them
// to exit, so no writer of theirs is left to write after the check.
func (c *Cluster) StopWorkers(ctx context.Context) {
	for _, s := range c.slots {
		if s.paused {
			_ = c.resume(s)
		}
		_ = s.proc.Terminate()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, s := range c.slots {
		if s.proc.Wait(ctx) != nil {
			_ = s.proc.Kill()
			<-s.proc.Done()
		}
	}
}

// Close kills every process, stops the proxies and removes the data.
func (c *Cluster) Close() error {
	err := c.fleet.Close()
	err = errors.Join(err, c.saveLogs())
	for _, s := range c.slots {
		for _, p := range s.proxies {
			p.Stop()
		}
	}
	for _, n := range c.nodes {
		if n.client != nil {
			_ = n.client.Close()
		}
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}
