package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// stubbornWriter ignores SIGTERM and appends "<token> <unix ns>" to $OUT
// every 50ms until it is killed: the side effect the lock exists to keep
// from overlapping.
const stubbornWriter = `trap '' TERM
while :; do echo "$LOCKWORKER_FENCING_TOKEN $(date +%s%N)" >> "$OUT"; sleep 0.05; done
`

// TestCommandDeadBeforeNextLeaderWrites: a job's command that traps SIGTERM
// keeps writing while its leader's link to Redis is cut mid-job. Its last
// line must be written before the next leader's command writes its first:
// the guest supervisor kills it no later than the old lease's deadline,
// which comes before the key can expire in Redis. LOCKWORKER_LINKCUTS=20
// measures more cuts (the gaps are logged).
func TestCommandDeadBeforeNextLeaderWrites(t *testing.T) {
	processTest(t)
	cuts := 3
	if n, err := strconv.Atoi(os.Getenv("LOCKWORKER_LINKCUTS")); err == nil && n > 0 {
		cuts = n
	}
	r := redistest.Start(t, redistest.Options{})
	tox := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	dir := t.TempDir()
	out, script := filepath.Join(dir, "effects"), filepath.Join(dir, "writer.sh")
	if err := os.WriteFile(script, []byte(stubbornWriter), 0o755); err != nil {
		t.Fatal(err)
	}
	var ws []*worker
	proxies := map[*worker]*toxiproxy.Proxy{}
	for _, name := range []string{"cut-a", "cut-b"} {
		p := toxiproxy.NewProxy(tox, name, "127.0.0.1:0", r.Addr())
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		env := append(fastEnv("redis://"+p.Listen), "JOB_HANDLER=exec", "JOB_COMMAND=/bin/sh "+script,
			"JOB_ENV=OUT", "OUT="+out, "JOB_MAX_ATTEMPTS=1000", "JOB_STOP_GRACE=10s")
		w := startWorker(t, name, env...)
		ws = append(ws, w)
		proxies[w] = p
	}
	poll.Until(t, 10*time.Second, "one leader", func() bool { return len(leaders(ws...)) == 1 })
	enqueueN(t, fastEnv(r.URL()), 1)
	var gaps []time.Duration
	for i := range cuts {
		old := leaders(ws...)
		if len(old) != 1 {
			t.Fatalf("cut %d: %d leaders", i+1, len(old))
		}
		s, _ := old[0].status()
		poll.Until(t, 10*time.Second, "the leader's command writing", func() bool { return len(effects(t, out)[s.Token]) > 2 })
		p := proxies[old[0]]
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(`{"name":"cut","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)); err != nil {
			t.Fatal(err)
		}
		// Five lines of the next command (250ms) give a still-running old
		// one time to show itself with a line after the new one's first.
		var next int64
		poll.Until(t, 15*time.Second, "the next leader's command writing", func() bool {
			for tok, at := range effects(t, out) {
				if tok > s.Token && len(at) >= 5 {
					next = tok
					return true
				}
			}
			return false
		})
		e := effects(t, out)
		last := slices.MaxFunc(e[s.Token], time.Time.Compare)
		first := slices.MinFunc(e[next], time.Time.Compare)
		if !last.Before(first) {
			t.Fatalf("cut %d: token %d's command wrote at %s, after token %d's first write at %s",
				i+1, s.Token, last.Format(time.StampMicro), next, first.Format(time.StampMicro))
		}
		gaps = append(gaps, first.Sub(last))
		if err := p.Toxics.RemoveToxic(t.Context(), "cut"); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, "the cut replica following again", func() bool {
			st, ok := old[0].status()
			return ok && st.State == "waiting_to_acquire_lock"
		})
	}
	slices.Sort(gaps)
	t.Logf("%d link cuts: gap from the old command's last write to the new one's first: min %s, median %s, max %s",
		len(gaps), gaps[0].Round(time.Millisecond), gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
}

// effects reads the writers' lines: the times each token wrote.
func effects(t *testing.T, path string) map[int64][]time.Time {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int64][]time.Time{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		tok, ns, ok := strings.Cut(sc.Text(), " ")
		k, err1 := strconv.ParseInt(tok, 10, 64)
		n, err2 := strconv.ParseInt(ns, 10, 64)
		if ok && err1 == nil && err2 == nil { // a line cut short by SIGKILL is skipped
			out[k] = append(out[k], time.Unix(0, n))
		}
	}
	return out
}

// TestDaemonKilledLeavesNoCommand: a job's command that starts a
// background grandchild (and that one a child of its own), then kill -9 of
// the daemon: nothing of the command's tree is left after 1s.
func TestDaemonKilledLeavesNoCommand(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	dir := t.TempDir()
	pids, script := filepath.Join(dir, "pids"), filepath.Join(dir, "bg.sh")
	body := `sleep 300 & echo $! >> "$PIDS"
sh -c 'sleep 300 & echo $! >> "$PIDS"; wait' & echo $! >> "$PIDS"
echo $$ >> "$PIDS"
wait
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "JOB_HANDLER=exec", "JOB_COMMAND=/bin/sh "+script, "JOB_ENV=PIDS", "PIDS="+pids)
	w := startWorker(t, "killed", env...)
	poll.Until(t, 10*time.Second, "leads", func() bool { return len(leaders(w)) == 1 })
	enqueueN(t, env, 1)
	var tree []int
	poll.Until(t, 10*time.Second, "the command and its 3 descendants running", func() bool {
		b, _ := os.ReadFile(pids)
		tree = tree[:0]
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				tree = append(tree, pid)
			}
		}
		return len(tree) == 4
	})
	t.Cleanup(func() {
		for _, pid := range tree {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	w.signal(syscall.SIGKILL)
	took := poll.Until(t, time.Second, "every process of the command's tree gone", func() bool {
		for _, pid := range tree {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	t.Logf("the command's tree of %d processes was gone %s after kill -9 of its daemon", len(tree), took.Round(time.Millisecond))
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}
