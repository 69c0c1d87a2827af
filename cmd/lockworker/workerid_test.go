package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/roster"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// exitsTwo waits for w to exit 2 with output naming every one of want.
func exitsTwo(t *testing.T, w *worker, want ...string) {
	t.Helper()
	err, ok := w.exited(10 * time.Second)
	var ee *exec.ExitError
	if !ok || !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("%s: exited=%v err=%v, want exit 2\n%s", w.name, ok, err, w.out)
	}
	for _, s := range want {
		if !strings.Contains(w.out.String(), s) {
			t.Fatalf("%s's output lacks %q:\n%s", w.name, s, w.out)
		}
	}
}

// TestDuplicateWorkerIDRefused: a second replica started with the
// WORKER_ID of a live one exits 2 naming WORKER_ID and the live one's
// host and pid, and the live one's record stays its own. A replica that
// was killed is restarted under its name at once on the same host (its
// pid is gone); a name another host's record holds is free once that
// record expired.
func TestDuplicateWorkerIDRefused(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	first := startWorker(t, "dup", env...)
	leaderOf(t, 10*time.Second, first)
	second := startWorker(t, "dup", env...)
	exitsTwo(t, second, "WORKER_ID", `"dup" is the name of a live replica`, "pid "+strconv.Itoa(first.cmd.Process.Pid))
	for _, rec := range queueStatus(t, env).Replicas {
		if rec.WorkerID == "dup" && rec.PID != first.cmd.Process.Pid {
			t.Fatalf("the refused replica wrote its record: %+v", rec)
		}
	}
	if s, ok := first.status(); !ok || !s.Leader {
		t.Fatalf("the first dup after the second was refused: %+v, answering %v", s, ok)
	}

	// kill -9, then a restart on this host: its record is still live, its
	// pid gone.
	first.signal(syscall.SIGKILL)
	_, _ = first.exited(5 * time.Second)
	again := startWorker(t, "dup", env...)
	leaderOf(t, 10*time.Second, again)

	// A live record of the name from another host: refused until it
	// expires (fastEnv's records live 3 x RENEW_INTERVAL, 1.2 s).
	k := keys(t).Replica("elsewhere")
	body, _ := json.Marshal(roster.Record{WorkerID: "elsewhere", Host: "another-host", PID: 1, UpdatedAt: time.Now()})
	if err := r.Client().Set(t.Context(), k, body, 1200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	refused := startWorker(t, "elsewhere", env...)
	exitsTwo(t, refused, "WORKER_ID", `host "another-host", pid 1`, "until its record expires, 1.2s after its last refresh")
	poll.Until(t, 5*time.Second, "the other host's record expiring", func() bool {
		return r.Client().Exists(t.Context(), k).Val() == 0
	})
	later := startWorker(t, "elsewhere", env...)
	poll.Until(t, 10*time.Second, "the replica started once the record expired waiting", func() bool {
		s, ok := later.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
}
