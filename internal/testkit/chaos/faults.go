package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/lockworker/lockworker/internal/backoff"
)

// Kind names a fault.
type Kind string

// The faults the suite injects.
const (
	Kill9        Kind = "kill-9"        // SIGKILL a replica, start a new one in its place
	Pause        Kind = "sigstop"       // SIGSTOP a replica (and its writer mid-write) past the TTL
	LinkCut      Kind = "link-cut"      // drop all traffic between a replica and Redis nodes
	LinkDelay    Kind = "link-delay"    // delay that traffic by twice the TTL
	RedisRestart Kind = "redis-restart" // kill -9 a node and restart it (AOF on node 0 only)
	Expire       Kind = "pexpire"       // expire the lock early on a majority (a clock jump)
	Term         Kind = "sigterm"       // SIGTERM a replica (a deploy), start a new one in its place
)

// Kinds lists the faults of a run by default, in the order the summary
// prints them.
var Kinds = []Kind{Kill9, Pause, LinkCut, LinkDelay, RedisRestart, Expire}

// ScheduleKinds are the faults of a schedule run (Config.ScheduleFor):
// those issue 35 names for it.
var ScheduleKinds = []Kind{Kill9, Term, Pause, RedisRestart}

// fault is one injected fault: what it hit and when it healed.
type fault struct {
	kind   Kind
	target string
	leader bool      // the target was the leader (of partition part)
	part   int       // the partition it led (0 without partitions)
	token  int64     // its token then
	healed time.Time // when the cluster was whole again
}

// injector injects faults into a cluster.
type injector struct {
	c   *Cluster
	rng *rand.Rand
	ttl time.Duration
	// outages are the times a Redis node was down, from its kill to its
	// restart.
	outages [][2]time.Time
}

// target picks the leader (with partitions, a partition's leader) most of
// the time, another replica otherwise.
func (in *injector) target(ctx context.Context) (lead, bool) {
	if in.rng.IntN(5) > 0 {
		if l, ok := in.c.waitLead(ctx, 5*in.ttl, in.rng); ok {
			return l, true
		}
	}
	return lead{s: in.c.slots[in.rng.IntN(len(in.c.slots))]}, false
}

// takeover waits (bounded) until the store accepted a write of partition
// part with a token above tok: another leader of it has worked since the
// fault began.
func (in *injector) takeover(ctx context.Context, part int, tok int64) bool {
	deadline := time.Now().Add(10*in.ttl + 10*time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if r, ok := in.c.coord.Store().LastIn(part); ok && r.Token > tok {
			return true
		}
		backoff.Sleep(ctx, 10*time.Millisecond)
	}
	return false
}

// holdFor keeps a fault on a replica in place: until another leader has
// worked when the replica led, else for one to two TTLs (the outage's
// length, not a wait for anything).
func (in *injector) holdFor(ctx context.Context, leader bool, part int, tok int64) {
	if leader {
		in.takeover(ctx, part, tok)
		return
	}
	backoff.Sleep(ctx, in.ttl+time.Duration(in.rng.Int64N(int64(in.ttl))))
}

func (in *injector) inject(ctx context.Context, k Kind) (fault, error) {
	switch k {
	case Kill9:
		return in.kill9(ctx)
	case Term:
		return in.term(ctx)
	case Pause:
		return in.pause(ctx)
	case LinkCut:
		return in.link(ctx, LinkCut, `{"name":"chaos","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)
	case LinkDelay:
		return in.link(ctx, LinkDelay, fmt.Sprintf(`{"name":"chaos","type":"latency","stream":"downstream","attributes":{"latency":%d}}`, 2*in.ttl.Milliseconds()))
	case RedisRestart:
		return in.redisRestart(ctx)
	case Expire:
		return in.expire(ctx)
	}
	return fault{}, fmt.Errorf("chaos: unknown fault %q", k)
}

func (in *injector) kill9(ctx context.Context) (fault, error) {
	l, leader := in.target(ctx)
	s := l.s
	f := fault{kind: Kill9, target: s.name, leader: leader, part: l.part, token: l.token}
	if err := s.proc.Kill(); err != nil {
		return f, err
	}
	<-s.proc.Done()
	if err := in.c.startWorker(s); err != nil {
		return f, err
	}
	f.healed = time.Now()
	return f, nil
}

// term stops a replica gracefully, as a deploy does, waits for it to
// exit, and starts a new one in its place.
func (in *injector) term(ctx context.Context) (fault, error) {
	l, leader := in.target(ctx)
	s := l.s
	f := fault{kind: Term, target: s.name, leader: leader, part: l.part, token: l.token}
	if err := s.proc.Terminate(); err != nil {
		return f, err
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if s.proc.Wait(wctx) != nil {
		_ = s.proc.Kill()
		<-s.proc.Done()
	}
	if err := in.c.startWorker(s); err != nil {
		return f, err
	}
	f.healed = time.Now()
	return f, nil
}

// pause stops the leader while its writer is between Begin and its write,
// keeps both stopped until another leader has written, then lets the
// writer go first: its write reaches the store late, with a stale token.
// The replica is resumed once that write landed or the writer is gone.
func (in *injector) pause(ctx context.Context) (fault, error) {
	// Always the leader when there is one: this is the fault that must bite.
	l, leader := in.c.waitLead(ctx, 5*in.ttl, in.rng)
	if !leader {
		l.s = in.c.slots[in.rng.IntN(len(in.c.slots))]
	}
	s := l.s
	f := fault{kind: Pause, target: s.name, leader: leader, part: l.part, token: l.token}
	var b Begin
	trap := in.c.coord.Arm(s.name)
	if leader {
		select {
		case b = <-trap.Caught():
		case <-time.After(5 * in.ttl):
		case <-ctx.Done():
		}
	}
	if b.PID == 0 {
		in.c.coord.Disarm(trap)
		if err := in.c.pause(s, 0); err != nil {
			return f, err
		}
		in.holdFor(ctx, leader, l.part, l.token)
		f.healed = time.Now()
		return f, in.c.resume(s)
	}
	err := in.c.pause(s, b.PID)
	// Released only now, so the reply waits unread in the stopped writer.
	in.c.coord.Disarm(trap)
	if err != nil {
		_ = syscall.Kill(b.PID, syscall.SIGCONT)
		_ = in.c.resume(s)
		return f, err
	}
	f.part, f.token = b.Partition, b.Token // the job caught: its partition must move
	in.takeover(ctx, b.Partition, b.Token)
	n := len(in.c.coord.Store().History())
	_ = syscall.Kill(b.PID, syscall.SIGCONT)
	in.lateWrite(ctx, b, n)
	f.healed = time.Now()
	return f, in.c.resume(s)
}

// lateWrite waits (bounded) until the store recorded b's write after
// position n, or b's process is gone.
func (in *injector) lateWrite(ctx context.Context, b Begin, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		h := in.c.coord.Store().History()
		for _, r := range h[min(n, len(h)):] {
			if r.Worker == b.Worker && r.Token == b.Token && r.Seq == b.Seq {
				return
			}
		}
		if !alive(b.PID) {
			return
		}
		backoff.Sleep(ctx, 5*time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(st), ") Z ")
}

// link applies a toxic to the target's links: to every node (a partition of
// the replica) or, one time in four, to one node only.
func (in *injector) link(ctx context.Context, k Kind, toxic string) (fault, error) {
	l, leader := in.target(ctx)
	s := l.s
	f := fault{kind: k, target: s.name, leader: leader, part: l.part, token: l.token}
	proxies := s.proxies
	if len(proxies) > 1 && in.rng.IntN(4) == 0 {
		i := in.rng.IntN(len(proxies))
		proxies = proxies[i : i+1]
		f.target += fmt.Sprintf("->redis%d", i)
		leader = false // it keeps its majority: wait a TTL, not for a takeover
	}
	for _, p := range proxies {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			return f, fmt.Errorf("chaos: toxic on %s: %w", p.Name, err)
		}
	}
	in.holdFor(ctx, leader, l.part, l.token)
	for _, p := range proxies {
		if err := p.Toxics.RemoveToxic(ctx, "chaos"); err != nil {
			return f, fmt.Errorf("chaos: remove toxic on %s: %w", p.Name, err)
		}
	}
	f.healed = time.Now()
	return f, nil
}

// redisRestart kill -9s a node, leaves it down for up to half a TTL and
// starts it again on its data directory; node 0 replays its AOF, the
// others come back empty. The proxies then point at the new port.
func (in *injector) redisRestart(ctx context.Context) (fault, error) {
	n := in.c.nodes[in.rng.IntN(len(in.c.nodes))]
	f := fault{kind: RedisRestart, target: fmt.Sprintf("redis%d (aof=%v)", n.idx, n.aof)}
	in.c.nodesMu.Lock()
	defer in.c.nodesMu.Unlock()
	down := time.Now()
	if err := n.redis.Kill(); err != nil {
		return f, err
	}
	<-n.redis.Done()
	backoff.Sleep(ctx, time.Duration(in.rng.Int64N(int64(in.ttl/2)))) // the outage itself
	if err := in.c.startNode(ctx, n); err != nil {
		return f, err
	}
	for _, s := range in.c.slots {
		p := s.proxies[n.idx]
		if err := p.Update(&toxiproxy.Proxy{Listen: p.Listen, Upstream: n.redis.Addr(), Enabled: true}); err != nil {
			return f, fmt.Errorf("chaos: repoint %s: %w", p.Name, err)
		}
	}
	f.healed = time.Now()
	if n.aof { // node 0: the queue's, so the schedule's
		in.outages = append(in.outages, [2]time.Time{down, f.healed})
	}
	return f, nil
}

// expire makes the lock key vanish early on a majority of nodes, as a clock
// jump on those nodes would, while the leader still believes it holds it.
// With partitions it is one partition's lock, a led one when there is one.
func (in *injector) expire(ctx context.Context) (fault, error) {
	nodes := in.c.nodes
	if len(nodes) > 1 {
		perm := in.rng.Perm(len(nodes))
		k := len(nodes)/2 + 1 + in.rng.IntN(len(nodes)-len(nodes)/2)
		nodes = nil
		for _, i := range perm[:k] {
			nodes = append(nodes, in.c.nodes[i])
		}
	}
	f := fault{kind: Expire, target: fmt.Sprintf("%d of %d nodes", len(nodes), len(in.c.nodes))}
	parts := in.c.cfg.Partitions
	if parts > 1 {
		if ls := in.c.leads(ctx); len(ls) > 0 {
			l := ls[in.rng.IntN(len(ls))]
			f.leader, f.part, f.token = true, l.part, l.token
			f.target += fmt.Sprintf(" (lock of partition %d, %s)", l.part, l.s.name)
		} else {
			f.part = in.rng.IntN(parts)
			f.target += fmt.Sprintf(" (lock of partition %d)", f.part)
		}
	} else if s, tok := in.c.Leader(ctx); s != nil {
		f.leader, f.token = true, tok
		f.target += " (lock of " + s.name + ")"
	}
	for _, n := range nodes {
		if err := n.client.PExpire(ctx, keys.Partition(f.part, parts).Lock(), time.Millisecond).Err(); err != nil {
			return f, fmt.Errorf("chaos: pexpire on redis%d: %w", n.idx, err)
		}
	}
	f.healed = time.Now()
	return f, nil
}

func syscallCont(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }
