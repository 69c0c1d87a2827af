package jobs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/guest"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	h := must(NewLogHandler(LogConfig{Duration: 10 * time.Millisecond, Logger: log}))
	if err := h.Handle(t.Context(), Job{ID: "J1", Attempt: 1}, newLease(7, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, `msg="Doing some heavy work..."`) ||
		!strings.Contains(out, "jobId=J1") || !strings.Contains(out, "token=7") {
		t.Fatalf("log:\n%s", out)
	}
	if must(NewLogHandler(LogConfig{})).d != time.Second {
		t.Fatal("default duration is not 1s")
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	err := must(NewLogHandler(LogConfig{Duration: time.Hour})).Handle(ctx, Job{ID: "J2"}, newLease(1, time.Minute))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("cancelled Handle: %v after %s", err, time.Since(start))
	}
}

func TestExecHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes (skipped with -short)")
	}
	dir := t.TempDir()
	t.Run("stdin and env", func(t *testing.T) {
		out, envFile := filepath.Join(dir, "out"), filepath.Join(dir, "env")
		t.Setenv("OUT", out)
		t.Setenv("ENVFILE", envFile)
		t.Setenv("REDIS_URLS", "redis://:s3cret@h:1")
		t.Setenv("JOBS_TOKEN", "t0ken")
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", `cat > "$OUT"; env > "$ENVFILE"`}, WorkerID: "w-1",
			AllowEnv: append([]string{"OUT", "ENVFILE"}, testEnv...)}))
		if err := h.Handle(t.Context(), Job{ID: "01JOB", Payload: []byte("hello\x00world"), Attempt: 2, Key: "acct-9", Partition: 5}, newLease(42, time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(out); string(got) != "hello\x00world" {
			t.Fatalf("stdin = %q", got)
		}
		env, _ := os.ReadFile(envFile)
		for _, want := range []string{"LOCKWORKER_JOB_ID=01JOB", "LOCKWORKER_FENCING_TOKEN=42",
			"LOCKWORKER_WORKER_ID=w-1", "LOCKWORKER_JOB_ATTEMPT=2", "LOCKWORKER_PARTITION=5", "LOCKWORKER_KEY=acct-9",
			"OUT=" + out} {
			if !strings.Contains(string(env), want+"\n") {
				t.Errorf("child env lacks %s", want)
			}
		}
		for _, absent := range []string{"LOCKWORKER_DUE_AT", "LOCKWORKER_SCHEDULE"} {
			if strings.Contains(string(env), absent) {
				t.Errorf("a job neither delayed nor scheduled: child env has %s", absent)
			}
		}
		for _, secret := range []string{"s3cret", "t0ken", "REDIS_URLS", "JOBS_TOKEN"} {
			if strings.Contains(string(env), secret) {
				t.Errorf("child env shows %s:\n%s", secret, env)
			}
		}
	})
	t.Run("a schedule's tick", func(t *testing.T) {
		envFile := filepath.Join(dir, "env-tick")
		t.Setenv("ENVFILE", envFile)
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", `env > "$ENVFILE"`},
			AllowEnv: append([]string{"ENVFILE"}, testEnv...)}))
		job := Job{ID: "01JOB", Payload: []byte("x"), Attempt: 1, Schedule: "nightly", DueAt: time.UnixMilli(1772359200123)}
		if err := h.Handle(t.Context(), job, newLease(42, time.Minute)); err != nil {
			t.Fatal(err)
		}
		env, _ := os.ReadFile(envFile)
		for _, want := range []string{"LOCKWORKER_SCHEDULE=nightly", "LOCKWORKER_SCHEDULED_AT=2026-03-01T10:00:00.123Z",
			"LOCKWORKER_DUE_AT=2026-03-01T10:00:00.123Z"} {
			if !strings.Contains(string(env), want+"\n") {
				t.Errorf("child env lacks %s", want)
			}
		}
	})
	t.Run("non-zero exit", func(t *testing.T) {
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", `echo "first line" >&2; echo "it broke" >&2; exit 3`}, AllowEnv: testEnv}))
		err := h.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
		if err == nil || !strings.Contains(err.Error(), "code 3") || !strings.Contains(err.Error(), "it broke") {
			t.Fatalf("err = %v, want exit code 3 and the stderr tail", err)
		}
	})
	t.Run("timeout stops the process tree", func(t *testing.T) {
		started, pidFile := filepath.Join(dir, "started3"), filepath.Join(dir, "pid3")
		// A command that hangs, and a child of it that would outlive it.
		script := `sleep 30 & echo $! > "$2"; touch "$1"; wait`
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", script, "sh", started, pidFile},
			Timeout: 300 * time.Millisecond, Grace: 100 * time.Millisecond, AllowEnv: testEnv}))
		err := h.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, guest.ErrStopped) {
			t.Fatalf("err = %v, want the command stopped at its Timeout (ErrTimeout)", err)
		}
		raw, _ := os.ReadFile(pidFile)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
		if perr != nil {
			t.Fatalf("pid file: %q", raw)
		}
		if alive(pid) {
			t.Fatalf("the command's child %d outlived the timeout", pid)
		}
	})
	t.Run("killed at the deadline it knew", func(t *testing.T) {
		// The daemon renewed (Valid stays true) but the deadline its
		// supervisor knows passes: the job is not this leader's to redo.
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", `exec sleep 30`}, Grace: time.Second, AllowEnv: testEnv}))
		lease := frozenDeadline{token: 7, at: time.Now().Add(200 * time.Millisecond)}
		err := h.Handle(t.Context(), Job{ID: "J"}, lease)
		if !errors.Is(err, ErrLeaseEnding) || !errors.Is(err, guest.ErrDeadline) {
			t.Fatalf("err = %v, want ErrLeaseEnding wrapping guest.ErrDeadline", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		for _, cfg := range []ExecConfig{{}, {Command: []string{""}}, {Command: []string{"true"}, Grace: -time.Second},
			{Command: []string{"true"}, Timeout: -time.Second}} {
			if _, err := NewExecHandler(cfg); err == nil || !strings.HasPrefix(err.Error(), "jobs: exec handler: ") {
				t.Errorf("NewExecHandler(%+v): %v, want a config error", cfg, err)
			}
		}
	})
	t.Run("cancel sends SIGTERM", func(t *testing.T) {
		started := filepath.Join(dir, "started1")
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", `touch "$1"; exec sleep 30`, "sh", started}, Grace: 10 * time.Second, AllowEnv: testEnv}))
		elapsed, err := runAndCancel(t, h, started)
		if err == nil || elapsed > 5*time.Second {
			t.Fatalf("child ran %s after cancel (err %v), want it stopped by SIGTERM at once", elapsed, err)
		}
	})
	t.Run("SIGKILL after Grace", func(t *testing.T) {
		started, pidFile := filepath.Join(dir, "started2"), filepath.Join(dir, "pid")
		const grace = 300 * time.Millisecond
		// Ignores SIGTERM, and so does its own child, which holds stderr open.
		script := `trap "" TERM; sleep 30 & echo $! > "$2"; touch "$1"; wait`
		h := must(NewExecHandler(ExecConfig{Command: []string{"sh", "-c", script, "sh", started, pidFile}, Grace: grace, AllowEnv: testEnv}))
		elapsed, err := runAndCancel(t, h, started)
		if err == nil || elapsed < grace || elapsed > 5*time.Second {
			t.Fatalf("child ran %s after cancel (err %v), want killed after grace %s", elapsed, err, grace)
		}
		raw, _ := os.ReadFile(pidFile)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
		if perr != nil {
			t.Fatalf("pid file: %q", raw)
		}
		poll.Until(t, 5*time.Second, "the grandchild to die", func() bool { return !alive(pid) })
	})
}

// runAndCancel runs h until the child has touched started, cancels, and
// returns how long Handle took to return after the cancel.
func runAndCancel(t *testing.T, h Handler, started string) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.Handle(ctx, Job{ID: "J"}, newLease(1, time.Minute)) }()
	poll.Until(t, 10*time.Second, "the child to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	cancel()
	at := time.Now()
	select {
	case err := <-errc:
		return time.Since(at), err
	case <-time.After(20 * time.Second):
		t.Fatal("Handle did not return after cancel")
		return 0, nil
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// must unwraps a constructor that cannot fail on the config a test gives
// it; a failure is a bug in the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// frozenDeadline is a lease whose deadline never moves but which its
// holder still deems valid: what a supervisor that missed a renewal sees.
type frozenDeadline struct {
	token int64
	at    time.Time
}

func (l frozenDeadline) Token() int64        { return l.token }
func (l frozenDeadline) Deadline() time.Time { return l.at }
func (l frozenDeadline) Valid() bool         { return true }
