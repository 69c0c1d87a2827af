package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// queueStatus is `lockworker status --json`, read in-process.
func queueStatus(t *testing.T, env []string) statusReport {
	t.Helper()
	var out strings.Builder
	if err := runCLI(t, []string{"status", "--json"}, env, &out); err != nil {
		t.Fatalf("status: %v\n%s", err, out.String())
	}
	var r statusReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out.String())
	}
	return r
}

// leaderOf waits for exactly one of ws to lead and returns it.
func leaderOf(t *testing.T, within time.Duration, ws ...*worker) *worker {
	t.Helper()
	var l []*worker
	poll.Until(t, within, "one leader", func() bool {
		l = leaders(ws...)
		return len(l) == 1
	})
	return l[0]
}

// noStaleWorking fails when a replica says it works (leader, or state
// working) under a token below the epoch: it holds the lock and can do
// nothing with it.
func noStaleWorking(t *testing.T, epoch int64, ws ...*worker) {
	t.Helper()
	for _, w := range ws {
		s, ok := w.status()
		if ok && (s.Leader || s.State == "working") && s.Token < epoch {
			t.Errorf("%s reports %+v with the epoch at %d", w.name, s, epoch)
		}
	}
}

// TestEpochPushedBehindTheLeader is the reproduction: with the
// epoch moved past a running leader's token (INCRBY epoch 5), the queue
// rejects its writes as stale; it gives its leadership up and the fleet
// processes every job, under a new token, without a restart.
func TestEpochPushedBehindTheLeader(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	a := startWorker(t, "push-a", env...)
	b := startWorker(t, "push-b", env...)
	first := leaderOf(t, 10*time.Second, a, b)
	before, _ := first.status()

	epoch, err := r.Client().IncrBy(t.Context(), keys(t).Lease().Epoch(), 5).Result()
	if err != nil {
		t.Fatal(err)
	}
	enqueueN(t, env, 20)
	took := poll.Until(t, 20*time.Second, "20 jobs committed", func() bool {
		s := queueStatus(t, env)
		return s.Pending == 0 && s.Committed == 20
	})
	t.Logf("20 jobs processed %s after the epoch was pushed from %d to %d", took, epoch-5, epoch)
	if !strings.Contains(first.out.String(), "from=working to=cleanup trigger=WORK_ENDED") ||
		!strings.Contains(first.out.String(), "stale fencing token") {
		t.Errorf("the leader with token %d did not give its leadership up as stale:\n%s", before.Token, first.out.String())
	}
	last, err := r.Client().HGet(t.Context(), keys(t).Lease().Last(), "token").Int64()
	if err != nil || last <= epoch {
		t.Fatalf("last commit under token %d (%v), want above the pushed epoch %d", last, err, epoch)
	}
	noStaleWorking(t, epoch, a, b)
}

// TestHandlerPanicIsDeadLettered: a job whose handler panics is a failed
// attempt: after JOB_MAX_ATTEMPTS it is dead-lettered with the panic, the
// jobs after it are processed, and the leader neither crashes nor gives
// its leadership up. Each panic's stack is logged once.
func TestHandlerPanicIsDeadLettered(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "JOB_MAX_ATTEMPTS=2", "JOB_ON_FAILURE=dead-letter", "LOCKWORKER_FAULTS=handler-panic")
	w := startWorker(t, "panicky", env...)
	leaderOf(t, 5*time.Second, w)
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", "panic please"}, env, &out); err != nil {
		t.Fatal(err)
	}
	enqueueN(t, env, 3)
	poll.Until(t, 10*time.Second, "3 committed and 1 dead letter", func() bool {
		s := queueStatus(t, env)
		return s.Committed == 3 && s.DeadLettered == 1 && s.Pending == 0
	})
	var dead []deadLetterReport
	out.Reset()
	if err := runCLI(t, []string{"deadletters", "--json"}, env, &out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out.String()), &dead); err != nil || len(dead) != 1 {
		t.Fatalf("dead letters %v: %s", err, out.String())
	}
	if d := dead[0]; d.Payload != "panic please" || d.Attempts != 2 || !strings.Contains(d.Error, "jobs: handler panicked: injected handler panic") {
		t.Fatalf("dead letter %+v", d)
	}
	logs := w.out.String()
	if n, stacks := strings.Count(logs, `msg="handler panicked"`), strings.Count(logs, " [running]:"); n != 2 || stacks != 2 {
		t.Errorf("%d panics and %d stacks logged, want 2 and 2 (one per attempt)", n, stacks)
	}
	if strings.Contains(logs, "WORK_ENDED") || strings.Count(logs, "trigger=LOCK_ACQUIRED") != 1 {
		t.Errorf("a handler panic ended the leadership:\n%s", logs)
	}
	w.signal(syscall.SIGTERM)
	if err, ok := w.exited(5 * time.Second); !ok || err != nil {
		t.Fatalf("after SIGTERM: exited=%v err=%v", ok, err)
	}
}

var retryArmed = regexp.MustCompile(`retry timer armed.* retryInMs=(\d+)`)

// TestWorkPanicBacksOff: work that panics at every leadership ends each
// one (logged once with its stack) and the process lives on; the waits
// between leaderships grow with each quick failure instead of flapping,
// and the replica's own release notices do not cut them short.
func TestWorkPanicBacksOff(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOCKWORKER_FAULTS=work-panic") // RETRY_INTERVAL=500ms
	w := startWorker(t, "doomed", env...)
	poll.Until(t, 20*time.Second, "7 leaderships given up", func() bool {
		return strings.Count(w.out.String(), "trigger=WORK_ENDED") >= 7
	})
	w.signal(syscall.SIGTERM)
	if err, ok := w.exited(5 * time.Second); !ok || err != nil {
		t.Fatalf("after SIGTERM: exited=%v err=%v (a panic must never end the process)", ok, err)
	}
	logs := w.out.String()
	ended := strings.Count(logs, `trigger=WORK_ENDED err="leader: work panicked: injected work panic"`)
	if panics, stacks := strings.Count(logs, `msg="work panicked"`), strings.Count(logs, " [running]:"); panics != ended || stacks != ended {
		t.Errorf("%d leaderships ended by a panic, %d panics and %d stacks logged: want one of each per panic", ended, panics, stacks)
	}
	// The waits after consecutive quick failures: [1/8, 1/4) of the retry
	// interval, doubling up to [2, 4) intervals: 62-125ms, 125-250ms,
	// 250-500ms, 500ms-1s, then 1-2s.
	var waits []int
	for _, m := range retryArmed.FindAllStringSubmatch(logs, -1) {
		ms, _ := strconv.Atoi(m[1])
		waits = append(waits, ms)
	}
	// The first low is 62.5ms and the log truncates to whole ms: a wait
	// of 62.5ms logs 62, one just under 125ms logs 124.
	lows := []float64{62.5, 125, 250, 500, 1000, 1000}
	if len(waits) < len(lows) {
		t.Fatalf("%d waits armed, want at least %d:\n%s", len(waits), len(lows), logs)
	}
	for i, lo := range lows {
		if w := float64(waits[i]); w < math.Floor(lo) || w >= 2*lo {
			t.Errorf("wait %d after %d quick failures: %dms, want in [%g, %g)ms (all: %v)", i+1, i+1, waits[i], lo, 2*lo, waits)
		}
	}
	if strings.Contains(logs, "to=acquiring_lock trigger=RELEASE_NOTICE") {
		t.Errorf("a release notice cut a back-off short:\n%s", logs)
	}
}

// TestTokensNeverGoBackwardsAfterDataLoss: Redis loses everything under a
// running leader (FLUSHALL stands for a restart without persistence); the
// leader, which held token t, does not lead again with token 1: its
// acquire raises the epoch past t first (the highest token it observed),
// and it says once, at ERROR, that Redis lost its data.
func TestTokensNeverGoBackwardsAfterDataLoss(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	c := r.Client()
	if err := c.Set(t.Context(), keys(t).Lease().Epoch(), 23, 0).Err(); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "remembers", env...)
	leaderOf(t, 5*time.Second, w)
	if s, _ := w.status(); s.Token != 24 {
		t.Fatalf("token %d, want 24", s.Token)
	}
	if err := c.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "leading again after the data loss", func() bool {
		s, ok := w.status()
		return ok && s.Leader && s.Token != 24
	})
	if s, _ := w.status(); s.Token != 25 {
		t.Fatalf("token after the data loss %d, want 25", s.Token)
	}
	out := w.out.String()
	if n := strings.Count(out, "level=ERROR msg=\"Redis lost its data"); n != 1 || !strings.Contains(out, "epochFound=0 highestObserved=24 token=25") {
		t.Fatalf("%d errors saying Redis lost its data (want 1, naming the epoch found, 0, and the highest token observed, 24):\n%s", n, out)
	}
}

// TestSIGHUPStopsLikeSIGTERM: a SIGHUPed leader releases the lock (with
// its notice) and exits 0, so the fleet is not blocked for a lease.
func TestSIGHUPStopsLikeSIGTERM(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOCK_TTL=20s", "RENEW_INTERVAL=5s", "RETRY_INTERVAL=30s")
	a := startWorker(t, "hup-a", env...)
	leaderOf(t, 5*time.Second, a)
	b := startWorker(t, "hup-b", env...)
	poll.Until(t, 5*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	a.signal(syscall.SIGHUP)
	if err, ok := a.exited(5 * time.Second); !ok || err != nil {
		t.Fatalf("after SIGHUP: exited=%v err=%v; want exit 0", ok, err)
	}
	// Far below the 20s lease and 30s retry: only the release notice gets b there.
	poll.Until(t, 5*time.Second, "b leads", func() bool { return len(leaders(b)) == 1 })
	if !strings.Contains(a.out.String(), "Releasing lock") {
		t.Fatalf("a did not release:\n%s", a.out.String())
	}
}
