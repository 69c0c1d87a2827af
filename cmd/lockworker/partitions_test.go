package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/partition"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// partitionsEnv is fastEnv for a fleet of p partitions whose jobs append
// their payload to a file named after their key in dir (the exec handler:
// LOCKWORKER_KEY and the payload), so a key's order can be read back.
func partitionsEnv(redisURL string, p int, dir string) []string {
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n{ cat; echo; } >> \"$OUT/$LOCKWORKER_KEY\"\n"), 0o755); err != nil {
		panic(err)
	}
	return append(fastEnv(redisURL), fmt.Sprint("PARTITIONS=", p), "JOB_HANDLER=exec", "JOB_COMMAND=/bin/sh "+script,
		"JOB_ENV=OUT", "OUT="+dir, "JOB_BATCH=1")
}

// leads is the partitions w's /status says it leads; ok false when it
// does not answer.
func (w *worker) leads() ([]int, bool) {
	s, ok := w.status()
	var out []int
	for _, l := range s.Leads {
		out = append(out, l.Partition)
	}
	slices.Sort(out)
	return out, ok
}

// shared waits until the workers lead every one of p partitions, each
// exactly once, the most and the fewest differing by at most one, and
// returns who leads what.
func shared(t *testing.T, p int, limit time.Duration, ws ...*worker) map[*worker][]int {
	t.Helper()
	var got map[*worker][]int
	poll.Until(t, limit, fmt.Sprintf("%d partitions shared by %d replicas", p, len(ws)), func() bool {
		got = map[*worker][]int{}
		var all []int
		lo, hi := p, 0
		for _, w := range ws {
			l, ok := w.leads()
			if !ok {
				return false
			}
			got[w] = l
			all = append(all, l...)
			lo, hi = min(lo, len(l)), max(hi, len(l))
		}
		slices.Sort(all)
		return len(all) == p && len(slices.Compact(all)) == p && hi-lo <= 1
	})
	return got
}

// whyNot checks that w's /status lists its p lanes, each leading (a token,
// no reason) or saying why not.
func whyNot(t *testing.T, w *worker, p int) {
	t.Helper()
	s, ok := w.status()
	if !ok || len(s.Lanes) != p {
		t.Fatalf("%s's /status lanes: %+v, want %d", w.name, s.Lanes, p)
	}
	for i, l := range s.Lanes {
		leads := slices.ContainsFunc(s.Leads, func(o struct {
			Partition int   `json:"partition"`
			Token     int64 `json:"token"`
		}) bool {
			return o.Partition == i
		})
		if l.Partition != i || leads != (l.Reason == "") || leads != (l.Token > 0) {
			t.Fatalf("%s's lane %d: %+v (leads it: %v)", w.name, i, l, leads)
		}
	}
}

// TestPartitionsShareTheFleet: three replicas share eight partitions to
// within one; every job of a key runs in enqueue order; a replica that
// stops hands its partitions over, one that dies loses them once their
// leases ran out, one that joins takes its share; a replica or command
// configured with another partition count is refused.
func TestPartitionsShareTheFleet(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	dir := t.TempDir()
	env := partitionsEnv(r.URL(), 8, dir)
	a := startWorker(t, "p-a", env...)
	b := startWorker(t, "p-b", env...)
	c := startWorker(t, "p-c", env...)
	shared(t, 8, 20*time.Second, a, b, c)
	for _, w := range []*worker{a, b, c} {
		whyNot(t, w, 8)
	}

	// Jobs of 12 keys, interleaved, each key's numbered in order.
	const keysN, perKey = 12, 6
	for i := range perKey {
		for k := range keysN {
			var out strings.Builder
			if err := runCLI(t, []string{"enqueue", "--key", fmt.Sprint("k", k), fmt.Sprint(i)}, env, &out); err != nil {
				t.Fatalf("enqueue: %v\n%s", err, out.String())
			}
		}
	}
	want := ""
	for i := range perKey {
		want += fmt.Sprintln(i)
	}
	poll.Until(t, 30*time.Second, "every key's jobs run, in order", func() bool {
		for k := range keysN {
			got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("k", k)))
			if string(got) != want {
				return false
			}
		}
		return true
	})

	// A job's lines carry its partition: each lane's handler logs with the
	// lane's logger.
	for _, w := range []*worker{a, b, c} {
		for line := range strings.SplitSeq(w.out.String(), "\n") {
			if strings.Contains(line, `msg="job command done"`) && !strings.Contains(line, " partition=") {
				t.Fatalf("%s: a job's line without its partition: %s", w.name, line)
			}
		}
	}
	if !strings.Contains(a.out.String()+b.out.String()+c.out.String(), `msg="job command done"`) {
		t.Fatal("no job's line to check")
	}

	// c stops: its partitions go to a and b, and it exits 0.
	c.signal(syscall.SIGTERM)
	if err, ok := c.exited(10 * time.Second); !ok || err != nil {
		t.Fatalf("c after SIGTERM: exited=%v err=%v", ok, err)
	}
	shared(t, 8, 10*time.Second, a, b)

	// A replica joins: it takes its share.
	d := startWorker(t, "p-d", env...)
	shared(t, 8, 20*time.Second, a, b, d)

	// a dies: its partitions go to b and d once their leases ran out.
	a.signal(syscall.SIGKILL)
	_, _ = a.exited(5 * time.Second)
	shared(t, 8, 20*time.Second, b, d)

	// Another partition count is refused, naming PARTITIONS and the
	// recorded count: the daemon exits 2, a command fails.
	wrong := startWorker(t, "p-wrong", append(env, "PARTITIONS=4")...)
	err, ok := wrong.exited(10 * time.Second)
	var ee *exec.ExitError
	if !ok || !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(wrong.out.String(), "PARTITIONS") ||
		!strings.Contains(wrong.out.String(), "runs with 8") {
		t.Fatalf("PARTITIONS=4 beside a fleet of 8: exited=%v err=%v\n%s", ok, err, wrong.out)
	}
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", "--key", "x", "y"}, append(env, "PARTITIONS=4"), &out); err == nil ||
		!strings.Contains(err.Error(), "PARTITIONS") {
		t.Fatalf("enqueue with PARTITIONS=4: %v", err)
	}
}

// TestPartitionsOnEveryTopology: partitions on a Redis Cluster (each
// partition's keys under a hash tag of its own, spread over the masters;
// the partitions' notices over classic pub/sub), a Sentinel group and a
// Redlock of three masters: two replicas share four partitions (and
// `lockworker partitions` names their owners), each key's jobs run in
// order, a SIGTERM hands the leaver's partitions over.
func TestPartitionsOnEveryTopology(t *testing.T) {
	processTest(t)
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) []string
	}{
		{"cluster", func(t *testing.T) []string {
			c := redistest.StartCluster(t, fleet.ClusterSpec{})
			return []string{"REDIS_MODE=cluster", "REDIS_URLS=" + strings.Join(c.URLs(), ",")}
		}},
		{"sentinel", func(t *testing.T) []string {
			g := redistest.StartSentinelGroup(t, fleet.SentinelSpec{})
			return []string{"REDIS_MODE=sentinel", "REDIS_SENTINEL_MASTER=" + g.Master, "REDIS_URLS=" + strings.Join(g.SentinelURLs(), ",")}
		}},
		{"redlock", func(t *testing.T) []string {
			var urls []string
			for range 3 {
				urls = append(urls, redistest.Start(t, redistest.Options{}).URL())
			}
			return []string{"REDIS_URLS=" + strings.Join(urls, ",")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each topology its own
			dir := t.TempDir()
			env := append(partitionsEnv("", 4, dir), tc.env(t)...) // the later REDIS_URLS wins
			a := startWorker(t, "pt-a", env...)
			b := startWorker(t, "pt-b", env...)
			leads := shared(t, 4, 30*time.Second, a, b)
			poll.Until(t, 10*time.Second, "lockworker partitions names each partition's owner", func() bool {
				owner := map[int]string{}
				for w, ps := range leads {
					for _, n := range ps {
						owner[n] = w.name
					}
				}
				parts := partitionsJSON(t, env)
				for i, p := range parts {
					if p.Partition != i || p.Owner != owner[i] || p.Token == 0 {
						return false
					}
				}
				return len(parts) == 4
			})
			for i := range 3 {
				for k := range 6 {
					var out strings.Builder
					if err := runCLI(t, []string{"enqueue", "--key", fmt.Sprint("k", k), fmt.Sprint(i)}, env, &out); err != nil {
						t.Fatalf("enqueue: %v\n%s", err, out.String())
					}
				}
			}
			poll.Until(t, 30*time.Second, "every key's jobs run, in order", func() bool {
				for k := range 6 {
					if got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("k", k))); string(got) != "0\n1\n2\n" {
						return false
					}
				}
				return true
			})
			b.signal(syscall.SIGTERM)
			if err, ok := b.exited(10 * time.Second); !ok || err != nil {
				t.Fatalf("b after SIGTERM: exited=%v err=%v", ok, err)
			}
			shared(t, 4, 10*time.Second, a)
		})
	}
}

// TestPartitionNoticesOnCluster: on a Redis Cluster the partitions'
// enqueue notices go over classic pub/sub, published from another node
// than the queue's; each must still wake its idle leader only once its
// job is there to claim (an idle leader with partitions looks by itself
// only every two minutes).
func TestPartitionNoticesOnCluster(t *testing.T) {
	processTest(t)
	c := redistest.StartCluster(t, fleet.ClusterSpec{})
	dir := t.TempDir()
	env := append(partitionsEnv("", 4, dir), "REDIS_MODE=cluster", "REDIS_URLS="+strings.Join(c.URLs(), ","))
	a := startWorker(t, "pn-a", env...)
	shared(t, 4, 30*time.Second, a)
	for k := range 12 {
		var out strings.Builder
		if err := runCLI(t, []string{"enqueue", "--key", fmt.Sprint("k", k), "x"}, env, &out); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, fmt.Sprint("the job of k", k), func() bool {
			got, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint("k", k)))
			return string(got) == "x\n"
		})
	}
}

// partitionsJSON runs `lockworker partitions --json`.
func partitionsJSON(t *testing.T, env []string) []figures.Partition {
	t.Helper()
	var out strings.Builder
	if err := runCLI(t, []string{"partitions", "--json"}, env, &out); err != nil {
		t.Fatalf("partitions --json: %v\n%s", err, out.String())
	}
	var parts []figures.Partition
	if err := json.Unmarshal([]byte(out.String()), &parts); err != nil {
		t.Fatalf("partitions --json: %v\n%s", err, out.String())
	}
	return parts
}

// keyOf is a key whose jobs land in partition n of p.
func keyOf(n, p int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprint("key-", i); partition.Of(k, p) == n {
			return k
		}
	}
}

// TestPartitionsCommand: `lockworker partitions` lists each of four
// partitions with the owner its lease names (the replica whose /status
// leads it, with the same token), a paused partition's pending jobs and
// their age, as the metrics do; with one partition it is the one lock
// and queue.
func TestPartitionsCommand(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := partitionsEnv(r.URL(), 4, t.TempDir())
	a := startWorker(t, "pc-a", env...)
	b := startWorker(t, "pc-b", env...)
	shared(t, 4, 20*time.Second, a, b)

	// Partition 2 is paused, with two jobs waiting.
	var out strings.Builder
	if err := runCLI(t, []string{"pause", "--partition", "2"}, env, &out); err != nil {
		t.Fatalf("pause: %v\n%s", err, out.String())
	}
	for range 2 {
		if err := runCLI(t, []string{"enqueue", "--key", keyOf(2, 4), "x"}, env, &out); err != nil {
			t.Fatalf("enqueue: %v\n%s", err, out.String())
		}
	}
	poll.Until(t, 10*time.Second, "partitions names each owner as its /status does", func() bool {
		want := map[int]figures.Partition{}
		for _, w := range []*worker{a, b} {
			s, ok := w.status()
			if !ok {
				return false
			}
			for _, l := range s.Leads {
				want[l.Partition] = figures.Partition{Partition: l.Partition, Owner: w.name, Token: l.Token}
			}
		}
		parts := partitionsJSON(t, env)
		if len(parts) != 4 {
			t.Fatalf("partitions --json lists %d partitions, want 4: %+v", len(parts), parts)
		}
		for i, p := range parts {
			w := want[i]
			if p.Partition != i || p.Owner != w.Owner || p.Token != w.Token || p.Token == 0 {
				return false
			}
		}
		return true
	})
	parts := partitionsJSON(t, env)
	for _, p := range parts {
		paused := p.Partition == 2
		if p.Paused != paused || (p.Pending == 2) != paused || (p.OldestPendingMs > 0) != paused || p.Epoch < p.Token {
			t.Errorf("partition %d: %+v", p.Partition, p)
		}
	}

	// The metrics say the same: each replica the partitions it leads,
	// every replica each partition's queue.
	leads := shared(t, 4, 10*time.Second, a, b)
	m := get(t, a.url("/metrics"))
	for _, want := range []string{`lockworker_partition_jobs_pending{partition="2"} 2`, `lockworker_partition_queue_paused{partition="2"} 1`,
		`lockworker_partition_jobs_pending{partition="0"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("a's /metrics lacks %s", want)
		}
	}
	for _, n := range leads[a] {
		if want := fmt.Sprintf(`lockworker_partition_leader{partition="%d"} 1`, n); !strings.Contains(m, want) {
			t.Errorf("a's /metrics lacks %s", want)
		}
	}
	if got := strings.Count(m, "\nlockworker_partition_leader{"); got != len(leads[a]) {
		t.Errorf("a's /metrics has %d partition_leader series, a leads %v", got, leads[a])
	}

	out.Reset()
	if err := runCLI(t, []string{"partitions"}, env, &out); err != nil {
		t.Fatalf("partitions: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"PARTITION", "OWNER", "pc-a", "pc-b", "paused", "without an owner: 0 of 4"} {
		if !strings.Contains(text, want) {
			t.Errorf("partitions does not show %q:\n%s", want, text)
		}
	}

	// One partition: one row, the lock's holder.
	one := fastEnv(redistest.Start(t, redistest.Options{}).URL())
	if parts := partitionsJSON(t, one); len(parts) != 1 || parts[0].Owner != "" || parts[0].Token != 0 {
		t.Fatalf("one partition, no replica: %+v", parts)
	}
	solo := startWorker(t, "pc-solo", one...)
	poll.Until(t, 10*time.Second, "the one partition's owner", func() bool {
		s, ok := solo.status()
		parts := partitionsJSON(t, one)
		return ok && s.Leader && len(parts) == 1 && parts[0].Owner == "pc-solo" && parts[0].Token == s.Token
	})
	out.Reset()
	if err := runCLI(t, []string{"partitions"}, one, &out); err != nil || !strings.Contains(out.String(), "owned: pc-solo 1; without an owner: 0 of 1") {
		t.Fatalf("partitions with one partition: %v\n%s", err, out.String())
	}
	if m := get(t, solo.url("/metrics")); strings.Contains(m, `partition="`) || !strings.Contains(m, "lockworker_leader 1") {
		t.Errorf("with one partition, /metrics serves a partition label, or no leader:\n%s", m)
	}
}

// TestPartitionsTableQuotes: an owner that would not print as itself (an
// escape sequence, a space) is quoted in the table, never written raw.
func TestPartitionsTableQuotes(t *testing.T) {
	var out strings.Builder
	err := printPartitions(&out, []figures.Partition{
		{Partition: 0, Owner: "a\x1b[2Jb", Token: 3},
		{Partition: 1, Owner: "a b", Token: 4},
		{Partition: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{`"a\x1b[2Jb"`, `"a b"`, "without an owner: 1 of 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table does not show %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("the table writes a raw escape:\n%q", text)
	}
}
