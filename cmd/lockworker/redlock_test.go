package main

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestRedlockHandoverByNotice: over three Redis masters, a SIGTERMed
// leader's release notice wakes the follower, which takes over at once
// instead of waiting out the lease (10s) or its retry interval (30s).
func TestRedlockHandoverByNotice(t *testing.T) {
	processTest(t)
	var urls []string
	for range 3 {
		urls = append(urls, redistest.Start(t, redistest.Options{}).URL())
	}
	env := []string{
		"REDIS_URLS=" + strings.Join(urls, ","),
		"LOCK_TTL=10s", "RENEW_INTERVAL=2s", "RETRY_INTERVAL=30s",
		"SHUTDOWN_TIMEOUT=5s", "WORK_DURATION=50ms", "LOG_LEVEL=debug",
	}
	a := startWorker(t, "redlock-a", env...)
	poll.Until(t, 5*time.Second, "a leads", func() bool { return len(leaders(a)) == 1 })
	b := startWorker(t, "redlock-b", env...)
	poll.Until(t, 5*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	if s, _ := a.status(); !strings.Contains(strings.Join(a.lines(), "\n"), "quorum 2") || s.Token < 1 {
		t.Fatalf("a is not in Redlock mode with a token: %+v", s)
	}

	a.signal(syscall.SIGTERM)
	// A safety net far below the 10s lease: only a notice gets b there.
	poll.Until(t, 5*time.Second, "b leads", func() bool { return len(leaders(b)) == 1 })
	if !strings.Contains(b.out.String(), "from=waiting_to_acquire_lock to=acquiring_lock trigger=RELEASE_NOTICE") {
		t.Fatalf("b was not woken by a release notice:\n%s", b.out.String())
	}
}

// TestRedlockAuthorityDownNoStorm: with the epoch authority (the first
// node) down, every attempt wins the quorum on the other two and fails at
// the epoch bump. Such a failed attempt must wake nobody (no release
// notice), and each replica's retries back off, instead of hundreds of
// attempts per second per replica woken by each other's clean-ups. Once
// the authority is back, one of them leads. The fleet first leads once
// with every node up, as a running fleet that loses a node.
func TestRedlockAuthorityDownNoStorm(t *testing.T) {
	var nodes []*redistest.Server
	var urls []string
	for i := range 3 {
		s := redistest.Start(t, redistest.Options{AppendOnly: i == 0}) // the authority keeps its epoch
		nodes, urls = append(nodes, s), append(urls, s.URL())
	}
	env := fastEnv(strings.Join(urls, ",")) // RETRY_INTERVAL=500ms
	var ws []*worker
	for _, name := range []string{"storm-a", "storm-b", "storm-c"} {
		ws = append(ws, startWorker(t, name, env...))
	}
	first := leaderOf(t, 10*time.Second, ws...)
	// Every follower has tried once and found the lock held: the fleet
	// runs, as it did before it lost a node.
	for _, w := range ws {
		if w != first {
			poll.Until(t, 10*time.Second, w.name+" finding the lock held", func() bool {
				return strings.Contains(w.out.String(), "held by another holder")
			})
		}
	}
	nodes[0].Kill()
	first.signal(syscall.SIGTERM)
	if _, ok := first.exited(10 * time.Second); !ok {
		t.Fatal("the leader did not exit after SIGTERM")
	}
	ws = slices.DeleteFunc(ws, func(w *worker) bool { return w == first })
	released := keys(t).Lease().ReleasedChannel()
	var subs []<-chan *redis.Message
	for _, s := range nodes[1:] {
		ps := s.Client().Subscribe(t.Context(), released)
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		subs = append(subs, ps.Channel())
	}
	poll.Until(t, 20*time.Second, "5 failed bumps on every replica", func() bool {
		for _, w := range ws {
			if failedBumps(w.out.String()) < 5 {
				return false
			}
		}
		return true
	})
	for _, w := range ws {
		checkErrorBackOff(t, w.name, w.out.String())
	}
	// Messages on one node arrive in publish order: a notice published
	// before the sentinel would come first.
	for i, s := range nodes[1:] {
		if err := s.Client().Publish(t.Context(), released, "sentinel").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-subs[i]:
			if m.Payload != "sentinel" {
				t.Fatalf("node %d: release notice %q from a failed attempt", i+1, m.Payload)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the sentinel never came")
		}
	}

	nodes[0].Restart()
	leaderOf(t, 10*time.Second, ws...)
}

// failedBumps counts the attempts that failed at the epoch bump: their
// transitions, not every line naming the error ("Waiting to lead" repeats
// it once as the lane's reason, which made 4 failures look like 5).
func failedBumps(logs string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "trigger=ACQUIRE_FAILED") && strings.Contains(line, "epoch bump failed") {
			n++
		}
	}
	return n
}

// checkErrorBackOff reads a replica's log: each wait armed after n
// consecutive acquire errors (a held lock in between neither counts nor
// resets) must be at least the back-off's lower bound for n, half of
// min(2^(n-1), 4) retry intervals (500ms here), and at most 4 intervals.
func checkErrorBackOff(t *testing.T, name, logs string) {
	t.Helper()
	errs, checked := 0, 0
	for _, line := range strings.Split(logs, "\n") {
		switch {
		case strings.Contains(line, "trigger=ACQUIRE_FAILED") && !strings.Contains(line, "held by another holder"):
			errs++
		case strings.Contains(line, "trigger=LOCK_ACQUIRED"):
			errs = 0
		}
		m := retryArmed.FindStringSubmatch(line)
		if m == nil || errs == 0 {
			continue
		}
		ms, _ := strconv.Atoi(m[1])
		lo := 250 << min(errs-1, 2)
		if ms < lo || ms > 2000 {
			t.Errorf("%s: wait after %d consecutive errors %dms, want in [%d, 2000]ms", name, errs, ms, lo)
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("%s: only %d waits after errors in the log", name, checked)
	}
}
