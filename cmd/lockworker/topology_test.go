package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestSentinelMode: lockworker on a Sentinel group (a master, a replica,
// three sentinels) through REDIS_MODE=sentinel; see testTopology.
func TestSentinelMode(t *testing.T) {
	processTest(t)
	g := redistest.StartSentinelGroup(t, fleet.SentinelSpec{})
	testTopology(t, []string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=" + g.Master,
		"REDIS_URLS=" + strings.Join(g.SentinelURLs(), ",")}, topology{
		mode:     "sentinel",
		failover: func(ctx context.Context) error { _, err := g.Failover(ctx); return err },
		settle: func(ctx context.Context) error {
			if err := g.WaitStable(ctx); err != nil {
				return err
			}
			return acknowledges(ctx, t, g.MasterAddr)
		},
		lossy: true,
	})
}

// TestClusterMode: lockworker on a 3-master Redis Cluster with a replica
// per master through REDIS_MODE=cluster, given every node as a seed; the
// failover is CLUSTER FAILOVER on the replica of the lock's slot.
func TestClusterMode(t *testing.T) {
	processTest(t)
	c := redistest.StartCluster(t, fleet.ClusterSpec{})
	testTopology(t, []string{"REDIS_MODE=cluster", "REDIS_URLS=" + strings.Join(c.URLs(), ",")}, topology{
		mode: "cluster",
		failover: func(ctx context.Context) error {
			_, err := c.Failover(ctx, keys(t).Key())
			return err
		},
		// Failover waits until the old master is a replica; then until it
		// acknowledges writes.
		settle: func(ctx context.Context) error {
			return acknowledges(ctx, t, func(ctx context.Context) (string, error) {
				m, _, err := c.MasterOf(ctx, keys(t).Key())
				return m, err
			})
		},
	})
}

// acknowledges waits until the master that master names has a replica
// that acknowledges its writes (a WAIT after a replicated PUBLISH says 1):
// after a failover the demoted master resyncs, and until it has loaded
// what it was sent, no enqueue is acknowledged (REDIS_MIN_REPLICAS=1).
func acknowledges(ctx context.Context, t *testing.T, master func(context.Context) (string, error)) error {
	t.Helper()
	var err error
	poll.Until(t, 30*time.Second, "the new master's replica acknowledging", func() bool {
		var addr string
		if addr, err = master(ctx); err != nil {
			return false
		}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer c.Close()
		c.Publish(ctx, keys(t).FleetChannel(), "probe") // replicated: a write WAIT can count
		return c.Wait(ctx, 1, 200*time.Millisecond).Val() == 1
	})
	return nil
}

// topology is how testTopology drives a Redis topology.
type topology struct {
	// mode is /status's mode.
	mode string
	// failover forces a failover of the master that holds the lock.
	failover func(context.Context) error
	// settle waits until the new master has an online replica again:
	// until then no new leadership can start and no enqueue is
	// acknowledged (REDIS_MIN_REPLICAS=1).
	settle func(context.Context) error
	// lossy: the failover can lose the old master's last writes. SENTINEL
	// FAILOVER promotes the replica while clients still write to the old
	// master, until the sentinels announce the switch; the jobs whose
	// commits were lost run again. CLUSTER FAILOVER stops the master's
	// clients until the replica caught up, and loses nothing.
	lossy bool
}

// testTopology runs the product on a topology: one leader among two
// replicas; jobs processed in order; a graceful handover with a higher
// token, woken by a release notice; a forced failover of the Redis master
// while jobs are processed, after which there is one leader with a token
// no lower than any before, every job committed before the failover is
// still committed, and jobs enqueued afterwards are processed; and a
// graceful handover after the failover, woken by a notice again, with a
// token above every one before. The retry interval is longer than the
// test's bounds, so only notices (or a held lock's TTL) make a follower
// try.
func testTopology(t *testing.T, redisEnv []string, topo topology) {
	effects := filepath.Join(t.TempDir(), "effects")
	script := filepath.Join(t.TempDir(), "effect.sh")
	// Each job takes 50ms, so a batch is still running when the failover
	// hits; job--001 fails.
	body := "#!/bin/sh\np=$(cat)\n[ \"$p\" = job--001 ] && exit 1\nsleep 0.05\necho \"$p $LOCKWORKER_FENCING_TOKEN\" >> " + effects + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(slices.Clone(redisEnv), "LOCK_TTL=2s", "RENEW_INTERVAL=400ms", "RETRY_INTERVAL=30s",
		"SHUTDOWN_TIMEOUT=5s", "LOG_LEVEL=debug", "JOB_HANDLER=exec", "JOB_COMMAND="+script, "JOB_MAX_ATTEMPTS=2", "JOB_ON_FAILURE=dead-letter")
	ws := []*worker{startWorker(t, "topo-a", env...), startWorker(t, "topo-b", env...)}
	lead := oneLeader(t, ws)
	if s, _ := lead.status(); s.Mode != topo.mode || s.LockKey != keys(t).Key() {
		t.Fatalf("/status: mode %q, lockKey %q; want %s, %s", s.Mode, s.LockKey, topo.mode, keys(t).Key())
	}
	if r := queueStatus(t, env); r.Mode != topo.mode || !r.Held {
		t.Fatalf("lockworker status: %+v; want mode %s and the lock held", r, topo.mode)
	}
	enqueueN(t, env, 10)
	waitCommitted(t, env, 10)

	// Graceful handover, woken by the release notice.
	lead, ws = handover(t, env, lead, ws, "topo-c")

	// Forced failover while the leader works through a batch.
	before := lead.statusToken(t)
	enqueueRange(t, env, 10, 40)
	committed := queueStatus(t, env).Committed
	start := time.Now()
	if err := topo.failover(t.Context()); err != nil {
		t.Fatal(err)
	}
	switched := time.Now()
	// Enqueues are acknowledged once a replica has them
	// (REDIS_MIN_REPLICAS=1): wait for the new master's replica.
	if err := topo.settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := queueStatus(t, env)
	if st.Committed < committed {
		t.Fatalf("committed went from %d to %d across the failover", committed, st.Committed)
	}
	total := 40
	if st.Pending == 0 { // the batch finished before the failover did
		enqueueRange(t, env, total, total+1)
		total++
	}
	next := waitCommitAfter(t, env, st.Committed)
	t.Logf("failover: every node agreed %s after the failover command; the next job was committed %s after it",
		switched.Sub(start).Round(time.Millisecond), next.Sub(start).Round(time.Millisecond))
	lead = oneLeader(t, ws)
	if tok := lead.statusToken(t); tok < before {
		t.Fatalf("leader's token %d after the failover, below %d before", tok, before)
	}
	enqueueRange(t, env, total, total+10)
	total += 10
	waitCommitted(t, env, int64(total))

	// Graceful handover after the failover: notices still work, and the
	// new token is above every token handed out before.
	if err := topo.settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	st = queueStatus(t, env)
	lead, _ = handover(t, env, lead, ws, "topo-d")
	if tok := lead.statusToken(t); tok <= st.Epoch {
		t.Fatalf("token %d after the failover's handover, not above the epoch %d", tok, st.Epoch)
	}
	checkEffects(t, effects, total, topo.lossy)
	deadLetterAndRequeue(t, env)
}

// deadLetterAndRequeue: a job that fails (twice: JOB_MAX_ATTEMPTS=2) shows in
// `lockworker deadletters`, and `lockworker requeue` puts it back, from
// where it fails into the dead letters again.
func deadLetterAndRequeue(t *testing.T, env []string) {
	t.Helper()
	deadIDs := func() []string {
		var out strings.Builder
		if err := runCLI(t, []string{"deadletters", "--json"}, env, &out); err != nil {
			t.Fatalf("deadletters: %v\n%s", err, out.String())
		}
		var dead []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(out.String()), &dead); err != nil {
			t.Fatalf("deadletters --json: %v\n%s", err, out.String())
		}
		var ids []string
		for _, d := range dead {
			ids = append(ids, d.ID)
		}
		return ids
	}
	enqueueRange(t, env, -1, 0) // job--001: the handler fails it
	var first []string
	poll.Until(t, 20*time.Second, "a dead letter", func() bool { first = deadIDs(); return len(first) == 1 })
	var out strings.Builder
	if err := runCLI(t, []string{"requeue", first[0]}, env, &out); err != nil {
		t.Fatalf("requeue: %v\n%s", err, out.String())
	}
	poll.Until(t, 20*time.Second, "the requeued job dead again", func() bool {
		ids := deadIDs()
		return len(ids) == 1 && ids[0] != first[0]
	})
}

// oneLeader waits until exactly one of ws leads and returns it; two
// leaders in one poll fail the test.
func oneLeader(t *testing.T, ws []*worker) *worker {
	t.Helper()
	var l []*worker
	seen := map[string]string{} // each replica's last answer, for the failure message
	poll.Until(t, 20*time.Second, "one leader", func() bool {
		l = leaders(ws...)
		if len(l) > 1 {
			t.Fatalf("%d leaders at once: %s and %s", len(l), l[0].name, l[1].name)
		}
		if len(l) != 1 {
			for _, w := range ws {
				s, ok := w.status()
				seen[w.name] = fmt.Sprintf("answered %t, state %s, leader %t", ok, s.State, s.Leader)
			}
			t.Logf("no single leader yet: %v", seen)
		}
		return len(l) == 1
	})
	return l[0]
}

// handover SIGTERMs the leader, checks that a follower takes over at once
// because of the release notice, with a higher token, and starts a new
// replica named next in the old one's place. It returns the new leader and
// the replicas.
func handover(t *testing.T, env []string, lead *worker, ws []*worker, next string) (*worker, []*worker) {
	t.Helper()
	token := lead.statusToken(t)
	notices := map[*worker]int{}
	for _, w := range ws {
		notices[w] = strings.Count(w.out.String(), "trigger=RELEASE_NOTICE")
	}
	lead.signal(syscall.SIGTERM)
	if err, ok := lead.exited(10 * time.Second); !ok || err != nil {
		t.Fatalf("%s after SIGTERM: exited=%v err=%v", lead.name, ok, err)
	}
	ws = slices.DeleteFunc(slices.Clone(ws), func(w *worker) bool { return w == lead })
	// Far below RETRY_INTERVAL (30s): only a notice gets a follower there.
	newLead := oneLeader(t, ws)
	if tok := newLead.statusToken(t); tok <= token {
		t.Fatalf("token %d after the handover, not above %d", tok, token)
	}
	if strings.Count(newLead.out.String(), "trigger=RELEASE_NOTICE") <= notices[newLead] {
		t.Fatalf("%s took over without a release notice:\n%s", newLead.name, newLead.out.String())
	}
	w := startWorker(t, next, env...)
	poll.Until(t, 20*time.Second, next+" follows", func() bool {
		s, ok := w.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	return newLead, append(ws, w)
}

func (w *worker) statusToken(t *testing.T) int64 {
	t.Helper()
	s, ok := w.status()
	if !ok {
		t.Fatalf("%s does not answer /status", w.name)
	}
	return s.Token
}

func waitCommitted(t *testing.T, env []string, n int64) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d jobs committed", n), func() bool {
		var out strings.Builder
		if runCLI(t, []string{"status", "--json"}, env, &out) != nil {
			return false // Redis moving under a failover
		}
		var r statusReport
		return json.Unmarshal([]byte(out.String()), &r) == nil && r.Committed == n && r.Pending == 0
	})
}

// waitCommitAfter returns when the committed counter first passes from:
// a job committed on whatever master now serves the queue.
func waitCommitAfter(t *testing.T, env []string, from int64) time.Time {
	t.Helper()
	var at time.Time
	poll.Until(t, 30*time.Second, "a job committed after the failover", func() bool {
		var out strings.Builder
		if runCLI(t, []string{"status", "--json"}, env, &out) != nil {
			return false
		}
		var r statusReport
		at = time.Now()
		return json.Unmarshal([]byte(out.String()), &r) == nil && r.Committed > from
	})
	return at
}

// enqueueRange enqueues job-from .. job-(to-1).
func enqueueRange(t *testing.T, env []string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		var out strings.Builder
		if err := runCLI(t, []string{"enqueue", fmt.Sprintf("job-%04d", i)}, env, &out); err != nil {
			t.Fatalf("enqueue: %v\n%s", err, out.String())
		}
	}
}

// checkEffects reads the effects the exec handler recorded ("payload
// token" per delivery): every job of 0..n-1, none started before the one
// ahead of it, tokens that never go down, and a job delivered again only
// right after itself (the one in flight at a change of leader) or, when
// lossy, also after a rewind to a job whose commit was lost.
func checkEffects(t *testing.T, path string, n int, lossy bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	next, prev, rewinds := 0, -1, 0 // the first job not seen yet, the one before, rewinds seen
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		job, tok, _ := strings.Cut(line, " ")
		token, err := strconv.ParseInt(tok, 10, 64)
		if err != nil || token < last {
			t.Fatalf("effect %q: token after %d", line, last)
		}
		last = token
		i, err := strconv.Atoi(strings.TrimPrefix(job, "job-"))
		switch {
		case err != nil || i > next:
			t.Fatalf("effect %q before job-%04d took effect", line, next)
		case i == next:
			next++
		case i != prev && !lossy:
			t.Fatalf("effect %q after job-%04d: a job redone out of turn", line, prev)
		case i != prev:
			rewinds++
		}
		prev = i
	}
	if next != n {
		t.Fatalf("%d jobs took effect, want %d", next, n)
	}
	if rewinds > 0 {
		t.Logf("%d effects ran again after the failover lost their commits", rewinds)
	}
}
