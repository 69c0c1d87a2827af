package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestHandoverAndFailover is the product in one test: two replicas, exactly
// one leads, and a follower's /status names it; SIGTERM hands over; kill -9
// fails over after the lease.
func TestHandoverAndFailover(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	a := startWorker(t, "worker-a", env...)
	b := startWorker(t, "worker-b", env...)

	var first *worker
	poll.Until(t, 10*time.Second, "one leader", func() bool {
		l := leaders(a, b)
		if len(l) == 1 {
			first = l[0]
		}
		return len(l) == 1
	})
	// Exactly one, and it stays that way over several renew cycles.
	for range 20 {
		if l := leaders(a, b); len(l) > 1 {
			t.Fatalf("two leaders at once: %v and %v", l[0].name, l[1].name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	firstStatus, _ := first.status()
	second := b
	if first == b {
		second = a
	}
	// The follower's /status names the leader and its token, from the lock.
	poll.Until(t, 5*time.Second, "the follower's /status naming the leader", func() bool { return second.namesLeader(first) })

	// Graceful: SIGTERM, exit 0, the other leads with a higher token.
	first.signal(syscall.SIGTERM)
	err, ok := first.exited(5 * time.Second)
	if !ok {
		t.Fatal("the leader did not exit within SHUTDOWN_TIMEOUT after SIGTERM")
	}
	if err != nil {
		t.Fatalf("the leader exited with %v after SIGTERM; want 0", err)
	}
	took := poll.Until(t, 3*time.Second, "handover after SIGTERM", func() bool { return len(leaders(second)) == 1 })
	t.Logf("graceful handover observed after %s", took)
	secondStatus, _ := second.status()
	if secondStatus.Token <= firstStatus.Token {
		t.Fatalf("token went from %d to %d; want it to increase", firstStatus.Token, secondStatus.Token)
	}
	out := first.out.String()
	for _, line := range []string{"Trying to acquire lock", "Lock acquired. Starting work", "Renewing lock", "Releasing lock"} {
		if !strings.Contains(out, line) {
			t.Errorf("the first leader's log lacks %q", line)
		}
	}

	// Crash: a third replica joins, the leader is killed, the third takes
	// over once the lease runs out.
	c := startWorker(t, "worker-c", env...)
	poll.Until(t, 5*time.Second, "third replica following", func() bool {
		s, ok := c.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	poll.Until(t, 5*time.Second, "the third's /status naming the leader", func() bool { return c.namesLeader(second) })
	second.signal(syscall.SIGKILL)
	limit := 2*time.Second + 500*time.Millisecond // LOCK_TTL + RETRY_INTERVAL
	took = poll.Until(t, limit+time.Second, "failover after kill -9", func() bool { return len(leaders(c)) == 1 })
	t.Logf("crash failover observed after %s (LOCK_TTL 2s + RETRY_INTERVAL 500ms = %s)", took, limit)
	if took > limit {
		t.Fatalf("failover took %s, more than LOCK_TTL + RETRY_INTERVAL (%s)", took, limit)
	}
	thirdStatus, _ := c.status()
	if thirdStatus.Token <= secondStatus.Token {
		t.Fatalf("token went from %d to %d; want it to increase", secondStatus.Token, thirdStatus.Token)
	}
}

// TestStartsBeforeRedis: a worker started while Redis is down keeps
// retrying and leads once Redis is up, without a restart.
func TestStartsBeforeRedis(t *testing.T) {
	processTest(t)
	port := redistest.FreePort(t)
	w := startWorker(t, "early", fastEnv("redis://127.0.0.1:"+strconv.Itoa(port))...)
	poll.Until(t, 5*time.Second, "a failed attempt logged", func() bool {
		return strings.Contains(w.out.String(), "trigger=ACQUIRE_FAILED")
	})
	if s, ok := w.status(); !ok || s.Leader {
		t.Fatalf("status while Redis is down: %+v ok=%v", s, ok)
	}
	redistest.StartOnPort(t, port, redistest.Options{})
	poll.Until(t, 5*time.Second, "leads once Redis is up", func() bool { return len(leaders(w)) == 1 })
	select {
	case <-w.done:
		t.Fatalf("worker exited: %v", w.err)
	default:
	}
}

// TestPausedLeaderStopsWorkFirst: a leader stopped (SIGSTOP) for longer than
// its lease stops its work when it wakes, before it does anything else as
// leader, while another replica has taken over.
func TestPausedLeaderStopsWorkFirst(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	a := startWorker(t, "paused", env...)
	poll.Until(t, 5*time.Second, "a leads", func() bool { return len(leaders(a)) == 1 })
	enqueueN(t, env, 200)
	poll.Until(t, 5*time.Second, "a works", func() bool { return strings.Contains(a.out.String(), "Doing some heavy work") })
	b := startWorker(t, "standby", env...)
	poll.Until(t, 5*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})

	a.signal(syscall.SIGSTOP)
	if !fleet.WaitStopped(a.cmd.Process.Pid, 5*time.Second) {
		t.Fatal("a did not stop")
	}
	poll.Until(t, 5*time.Second, "b takes over while a is paused", func() bool { return len(leaders(b)) == 1 })
	time.Sleep(500 * time.Millisecond) // a stays paused well past its 2s lease
	// Lines a wrote before it stopped may still be on their way through
	// the pipe, so "after waking" is told by the lines' own timestamps:
	// nothing can be logged between the stop and this moment.
	resumed := time.Now().Truncate(time.Millisecond)
	a.signal(syscall.SIGCONT)
	afterWake := func() []string {
		var out []string
		for _, line := range a.lines() {
			ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && !at.Before(resumed) {
				out = append(out, line)
			}
		}
		return out
	}
	// On waking, the work's deadline timer, the renew timer or the job that
	// was running runs first; each checks the local deadline before
	// anything else (the job's commit is refused, not sent), and says so
	// with its reason wherever it finds the lease invalid (between jobs
	// too).
	noticed := func(line string) bool {
		return strings.Contains(line, "lease deadline passed") || strings.Contains(line, "local deadline passed") ||
			strings.Contains(line, "lease no longer valid")
	}
	poll.Until(t, 3*time.Second, "a notices its lease ended", func() bool {
		return slices.ContainsFunc(afterWake(), noticed)
	})
	for _, line := range afterWake() {
		if noticed(line) {
			break
		}
		if strings.Contains(line, "Doing some heavy work") || strings.Contains(line, "committed") {
			t.Fatalf("after waking, the paused leader worked before stopping: %s", line)
		}
	}
	if l := leaders(a, b); len(l) != 1 || l[0] != b {
		t.Fatalf("leaders after the pause: %d; want only the standby", len(l))
	}
}

// TestSecondSignalExitsAtOnce: while a shutdown waits on work that will not
// stop, a second SIGTERM ends the process at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	dir := t.TempDir()
	script, running := filepath.Join(dir, "stubborn.sh"), filepath.Join(dir, "running")
	// The marker is written after the trap, so once it exists the command
	// ignores SIGTERM; a signal before that would find no job to wait on.
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\ntouch "+running+"\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "SHUTDOWN_TIMEOUT=20s", "JOB_HANDLER=exec", "JOB_COMMAND="+script)
	w := startWorker(t, "stubborn", env...)
	poll.Until(t, 5*time.Second, "leads", func() bool { return len(leaders(w)) == 1 })
	enqueueN(t, env, 1)
	poll.Until(t, 5*time.Second, "job running", func() bool {
		_, err := os.Stat(running)
		return err == nil
	})
	w.signal(syscall.SIGTERM)
	poll.Until(t, 2*time.Second, "shutdown begun", func() bool { return strings.Contains(w.out.String(), "signal received") })
	w.signal(syscall.SIGTERM)
	start := time.Now()
	err, ok := w.exited(2 * time.Second)
	if !ok {
		t.Fatal("a second SIGTERM did not end the process within 2s")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("exit after the second signal: %v; want death by SIGTERM", err)
	}
	t.Logf("exited %s after the second signal", time.Since(start))
}

// TestBadConfigExitsTwo: invalid settings print one message naming the
// variable and exit with code 2.
func TestBadConfigExitsTwo(t *testing.T) {
	processTest(t)
	tests := map[string]string{
		"RENEW_INTERVAL=8s":    "RENEW_INTERVAL",
		"REDIS_URLS=mongo://x": "REDIS_URLS",
		"LOCK_TTL=-1s":         "LOCK_TTL",
		"LOCK_TTL=3ms":         "LOCK_TTL",
		"WORK_DURATION=0":      "WORK_DURATION",
		"JOB_BATCH=0":          "JOB_BATCH",
		"REDIS_URLS=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://localhost:7001": "REDIS_URLS",
		"REDIS_MODE=sentinel": "REDIS_SENTINEL_MASTER",
		"REDIS_MODE=ring":     "REDIS_MODE",
		"JOBS_TOKEN=short":    "JOBS_TOKEN",
		"JOB_HANDLER=python":  "JOB_HANDLER",
	}
	for env, want := range tests {
		t.Run(env, func(t *testing.T) {
			// Bounded: a setting let through starts a replica that would
			// run until the test binary's timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary)
			cmd.Env = []string{env}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v; want code 2\n%s", err, out)
			}
			if !strings.Contains(string(out), want+":") {
				t.Fatalf("output does not name %s:\n%s", want, out)
			}
		})
	}
	err := runCLI(t, nil, []string{"PORT=0"}, &strings.Builder{})
	if exitCode(err) != 2 {
		t.Fatalf("run with PORT=0: %v; want exit code 2", err)
	}
}

// TestBadConfigReportsEveryVariable: the binary prints every bad variable
// of one run, each on a line of its own naming it, in words (not
// strconv's), and exits 2 without starting.
func TestBadConfigReportsEveryVariable(t *testing.T) {
	processTest(t)
	cmd := exec.Command(binary)
	cmd.Env = []string{"PORT=abc", "WORKER_ID=two words", "RENEW_INTERVAL=LOCK_TTL", "JOBS_TOKEN=short"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v; want code 2\n%s", err, out)
	}
	want := strings.Join([]string{
		"lockworker: invalid configuration:",
		`PORT: "abc" is not a port number`,
		`RENEW_INTERVAL: "LOCK_TTL" is not a duration such as 5s or 500ms`,
		`WORKER_ID: must be 1 to 128 printable ASCII characters without spaces (it is also the replica's Redis client name), got "two words"`,
		"JOBS_TOKEN: must be at least 16 bytes (it guards POST /jobs), got 5; generate one with: openssl rand -hex 32",
	}, "\n") + "\n"
	if string(out) != want {
		t.Fatalf("printed\n%s\nwant\n%s", out, want)
	}
}
