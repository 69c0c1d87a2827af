package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestDeadLettersAndRequeue: a job whose command fails is dead-lettered with
// its error; `deadletters` shows it and `requeue` puts it back as a new job.
func TestDeadLettersAndRequeue(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "JOB_HANDLER=exec", "JOB_COMMAND=false", "JOB_MAX_ATTEMPTS=1", "JOB_ON_FAILURE=dead-letter")
	w := startWorker(t, "dl", env...)
	poll.Until(t, 5*time.Second, "leads", func() bool { return len(leaders(w)) == 1 })
	enqueueN(t, env, 1)

	var dead []deadLetterReport
	poll.Until(t, 10*time.Second, "a dead letter", func() bool {
		var out strings.Builder
		if err := runCLI(t, []string{"deadletters", "--json"}, env, &out); err != nil {
			t.Fatalf("deadletters: %v\n%s", err, out.String())
		}
		if err := json.Unmarshal([]byte(out.String()), &dead); err != nil {
			t.Fatalf("deadletters --json: %v\n%s", err, out.String())
		}
		return len(dead) == 1
	})
	d := dead[0]
	if d.Payload != "job-0000" || d.Attempts != 1 || !strings.Contains(d.Error, "exited with code 1") || d.Token < 1 {
		t.Fatalf("dead letter %+v; want the payload, 1 attempt, the exit code and a token", d)
	}

	var out strings.Builder
	if err := runCLI(t, []string{"requeue", d.ID}, env, &out); err != nil {
		t.Fatalf("requeue: %v\n%s", err, out.String())
	}
	if !strings.HasPrefix(out.String(), d.ID+" -> ") {
		t.Fatalf("requeue printed %q", out.String())
	}
	out.Reset()
	if err := runCLI(t, []string{"requeue", d.ID}, env, &out); err == nil || !strings.Contains(err.Error(), "no dead letter "+d.ID) {
		t.Fatalf("a second requeue of the same ID: %v; want a not-found error", err)
	}
}

// TestExecChildStoppedWhenLeadershipIsLost: the exec handler's command is
// signalled once the leader's lease runs out (Redis frozen, so no renew can
// succeed), and the replica stops working.
func TestExecChildStoppedWhenLeadershipIsLost(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	script := filepath.Join(t.TempDir(), "long.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "JOB_HANDLER=exec", "JOB_COMMAND="+script)
	w := startWorker(t, "exec-lost", env...)
	poll.Until(t, 5*time.Second, "leads", func() bool { return len(leaders(w)) == 1 })
	enqueueN(t, env, 1)
	var pid int
	poll.Until(t, 5*time.Second, "the job's command running", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	r.Freeze()
	t.Cleanup(r.Thaw)
	// LOCK_TTL is 2s: the lease deadline passes, the job context ends, and
	// the command's process group gets SIGTERM (sleep dies of it).
	poll.Until(t, 6*time.Second, "the command stopped", func() bool {
		return syscall.Kill(pid, 0) != nil // ESRCH once it is gone and reaped
	})
	poll.Until(t, 3*time.Second, "the replica stopped working", func() bool {
		s, ok := w.status()
		return ok && !s.Leader && s.State != "working" && s.State != "renew_lock"
	})
	// pause_work already counts as stopped, but its stopWork, which logs
	// the interrupted job once the command's process is reaped, may still
	// be under way: wait for the line, not for a moment.
	poll.Until(t, 3*time.Second, `"job interrupted" in the log`, func() bool {
		return strings.Contains(w.out.String(), "job interrupted")
	})
}
