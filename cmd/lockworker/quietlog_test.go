package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestIdleFleetLogsQuietly: at the default level, an idle fleet's leader
// logs nothing per renewal, and a follower says once who leads and that
// it waits, then nothing per retry; the renewals and retries are counted
// from the metrics, not the log. No release notice wakes the follower
// while nothing is released. A change of leader still logs at INFO.
func TestIdleFleetLogsQuietly(t *testing.T) {
	processTest(t)
	const rounds = 5
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info")
	a := startWorker(t, "quiet-a", env...)
	poll.Until(t, 10*time.Second, "quiet-a leads", func() bool { return len(leaders(a)) == 1 })
	b := startWorker(t, "quiet-b", env...)
	poll.Until(t, 10*time.Second, "quiet-b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	poll.Until(t, 10*time.Second, "quiet-b says who leads", func() bool {
		return strings.Contains(b.out.String(), `msg="Waiting to lead" workerId=quiet-b reason="held by quiet-a (token `)
	})

	// Nothing was released: no notice woke the follower.
	if strings.Contains(b.out.String(), "trigger=RELEASE_NOTICE") {
		t.Errorf("the follower took a release notice while nothing was released:\n%s", b.out.String())
	}

	renewals := func() int { return counter(t, a, `lockworker_renew_seconds_count{result="renewed"}`) }
	retries := func() int { return counter(t, b, `lockworker_acquire_seconds_count{result="held"}`) }
	renewed0, retried0 := renewals(), retries()
	fromA, fromB := len(a.out.String()), len(b.out.String())
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d renewals and %d retries", rounds, rounds), func() bool {
		return renewals() >= renewed0+rounds && retries() >= retried0+rounds
	})
	leaderLog, followerLog := a.out.String()[fromA:], b.out.String()[fromB:]
	renewed, retried := renewals()-renewed0, retries()-retried0

	if lines := infoLines(leaderLog); len(lines) != 0 {
		t.Errorf("the leader logged %d INFO lines over %d renewals, want none:\n%s", len(lines), renewed, strings.Join(lines, "\n"))
	}
	if lines := infoLines(followerLog); len(lines) != 0 {
		t.Errorf("the follower logged %d INFO lines over %d retries, want none:\n%s", len(lines), retried, strings.Join(lines, "\n"))
	}
	if n := strings.Count(b.out.String(), `msg="Waiting to lead"`); n != 1 {
		t.Errorf("the follower said %d times who leads, want once:\n%s", n, b.out.String())
	}
	t.Logf("over %d renewals the leader logged %d INFO lines; over %d retries the follower logged %d",
		renewed, len(infoLines(leaderLog)), retried, len(infoLines(followerLog)))

	// A change of leader is news: it stays at INFO.
	fromB = len(b.out.String())
	a.signal(syscall.SIGTERM)
	poll.Until(t, 10*time.Second, "quiet-b leads", func() bool { return len(leaders(b)) == 1 })
	handover := strings.Join(infoLines(b.out.String()[fromB:]), "\n")
	for _, want := range []string{"to=acquiring_lock trigger=RELEASE_NOTICE", `msg="Lock acquired. Starting work"`, "to=working trigger=LOCK_ACQUIRED"} {
		if !strings.Contains(handover, want) {
			t.Errorf("the handover's INFO lines lack %s:\n%s", want, handover)
		}
	}
	if stop := strings.Join(infoLines(a.out.String()), "\n"); !strings.Contains(stop, `msg="Releasing lock"`) {
		t.Errorf("the old leader's INFO lines lack \"Releasing lock\":\n%s", stop)
	}
}

// infoLines are the INFO lines of a text log.
func infoLines(log string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if strings.Contains(sc.Text(), " level=INFO ") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// counter reads one series of the worker's /metrics; 0 when absent.
func counter(t *testing.T, w *worker, series string) int {
	t.Helper()
	for line := range strings.SplitSeq(get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", w.port)), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return 0
}
