//go:build linux

package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script, "sh"}, args...)
}

// newGuest is New, with GORACE passed on (see TestMain).
func newGuest(t *testing.T, cfg Config) *Guest {
	t.Helper()
	if testing.Short() {
		t.Skip("starts child processes (skipped with -short)")
	}
	cfg.AllowEnv = append(cfg.AllowEnv, "GORACE")
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The command's environment is exactly the allowed variables, whatever the
// daemon's holds.
func TestRunCleanEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"REDIS_URLS": "redis://:secret@x:6379", "REDIS_PASSWORD": "secret", "JOBS_TOKEN": "t", "ADMIN_TOKEN": "a",
		"LOCKWORKER_FENCING_TOKEN": "999", "GUEST_ALLOWED": "yes", "GUEST_NOT_ALLOWED": "no",
		"HOME": "/home/w", "LANG": "C.UTF-8", "TZ": "UTC",
	} {
		t.Setenv(k, v)
	}
	out := &lockedBuffer{}
	g, err := New(Config{Command: []string{"env"}, AllowEnv: []string{"GUEST_ALLOWED", "GUEST_UNSET"}, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Run(t.Context(), nil, map[string]string{"LOCKWORKER_JOB_ID": "j1", "LOCKWORKER_FENCING_TOKEN": "7"}, nil); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got)
	want := []string{
		"GUEST_ALLOWED=yes", "HOME=/home/w", "LANG=C.UTF-8", "LOCKWORKER_FENCING_TOKEN=7",
		"LOCKWORKER_JOB_ID=j1", "PATH=" + os.Getenv("PATH"), "TZ=UTC",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the command's environment is\n%q\nwant\n%q", got, want)
	}
	if strings.Contains(out.String(), "secret") {
		t.Fatal("a Redis credential reached the command")
	}
}

func TestRunResults(t *testing.T) {
	t.Run("success, stdin and stdout", func(t *testing.T) {
		out := &lockedBuffer{}
		g := newGuest(t, Config{Command: []string{"cat"}, Stdout: out})
		if err := g.Run(t.Context(), []byte("the payload"), nil, nil); err != nil {
			t.Fatal(err)
		}
		if out.String() != "the payload" {
			t.Fatalf("stdout = %q", out.String())
		}
	})
	t.Run("exit code and stderr tail", func(t *testing.T) {
		errOut := &lockedBuffer{}
		g := newGuest(t, Config{Command: sh(`echo "first line" >&2; echo "it broke" >&2; exit 3`), Stderr: errOut})
		err := g.Run(t.Context(), nil, nil, nil)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || ee.Signal != 0 || !strings.HasSuffix(ee.Stderr, "it broke") {
			t.Fatalf("Run = %#v; want an *ExitError with code 3 and the stderr tail", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "exited with code 3") || !strings.Contains(msg, "it broke") {
			t.Fatalf("message %q lacks the code or the stderr", msg)
		}
		if !strings.Contains(errOut.String(), "first line") {
			t.Fatalf("Stderr sink got %q", errOut.String())
		}
	})
	t.Run("stderr tail is bounded", func(t *testing.T) {
		g := newGuest(t, Config{Command: sh(`head -c 10000 /dev/zero | tr '\0' x >&2; echo END >&2; exit 1`)})
		var ee *ExitError
		if err := g.Run(t.Context(), nil, nil, nil); !errors.As(err, &ee) || len(ee.Stderr) > stderrTail || !strings.HasSuffix(ee.Stderr, "END") {
			t.Fatalf("Run = %v; want the last %d bytes of stderr", err, stderrTail)
		}
	})
	t.Run("ended by a signal", func(t *testing.T) {
		g := newGuest(t, Config{Command: sh(`kill -KILL $$`)})
		var ee *ExitError
		err := g.Run(t.Context(), nil, nil, nil)
		if !errors.As(err, &ee) || ee.Code != -1 || ee.Signal != syscall.SIGKILL || !strings.Contains(err.Error(), "signal 9") {
			t.Fatalf("Run = %v; want an *ExitError for SIGKILL", err)
		}
	})
	t.Run("missing command", func(t *testing.T) {
		g := newGuest(t, Config{Command: []string{"lockworker-no-such-command", "x"}})
		err := g.Run(t.Context(), nil, nil, nil)
		if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), `"lockworker-no-such-command"`) {
			t.Fatalf("Run = %v; want exec.ErrNotFound naming the command", err)
		}
	})
	t.Run("missing supervisor", func(t *testing.T) {
		g := newGuest(t, Config{Command: []string{"true"}, Supervisor: "/nonexistent/lockworker"})
		if err := g.Run(t.Context(), nil, nil, nil); err == nil || !strings.Contains(err.Error(), "starting the supervisor /nonexistent/lockworker") {
			t.Fatalf("Run = %v; want an error naming the supervisor", err)
		}
	})
	t.Run("ended before it started", func(t *testing.T) {
		g := newGuest(t, Config{Command: []string{"true"}})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := g.Run(ctx, nil, nil, nil); !errors.Is(err, ErrStopped) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v; want ErrStopped and context.Canceled", err)
		}
		past := time.Now().Add(-time.Millisecond)
		if err := g.Run(t.Context(), nil, nil, func() time.Time { return past }); !errors.Is(err, ErrStopped) || !errors.Is(err, ErrDeadline) {
			t.Fatalf("Run past the deadline = %v; want ErrStopped and ErrDeadline", err)
		}
	})
}

// A command that handles SIGTERM by exiting was still stopped: its exit 0
// is not a success.
func TestRunStopIsSIGTERMFirst(t *testing.T) {
	out := &lockedBuffer{}
	g := newGuest(t, Config{Command: sh(`trap 'echo "got TERM" >&2; exit 0' TERM; echo $$; while :; do sleep 0.05; done`), Stdout: out})
	ctx, cancel := context.WithCancel(t.Context())
	done := start(g, ctx, nil)
	procs := recordProcs(t, 1, out.String)
	cancel()
	err := await(t, done)
	if !errors.Is(err, ErrStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want ErrStopped wrapping context.Canceled", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "exited with code 0: ") || !strings.HasSuffix(msg, "got TERM") || strings.Contains(msg, "killed") {
		t.Fatalf("message %q: want the command's own exit after SIGTERM, no kill", msg)
	}
	if l := living(procs); l != nil {
		t.Fatalf("still running after Run returned: %v", l)
	}
}

// The central promise: a command that ignores SIGTERM is dead by the lease
// deadline, not after the (longer) grace, and Run returns only when it is.
func TestRunKillsAtTheDeadline(t *testing.T) {
	out := &lockedBuffer{}
	g := newGuest(t, Config{Command: sh(`trap 'echo term' TERM; echo $$; while :; do echo tick; sleep 0.05; done`), Grace: 5 * time.Second, Stdout: out})
	var deadline atomic.Pointer[time.Time]
	far := time.Now().Add(time.Hour)
	deadline.Store(&far)
	ctx, cancel := context.WithCancel(t.Context())
	done := start(g, ctx, func() time.Time { return *deadline.Load() })
	procs := recordProcs(t, 1, out.String)
	// The lease is lost with 200ms left: SIGTERM now, SIGKILL at the deadline.
	at := time.Now().Add(200 * time.Millisecond)
	deadline.Store(&at)
	cancel()
	err := await(t, done)
	returned := time.Now()
	if !errors.Is(err, ErrStopped) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "killed at the lease deadline") {
		t.Fatalf("Run = %v; want ErrStopped, killed at the lease deadline", err)
	}
	if l := living(procs); l != nil {
		t.Fatalf("still running after Run returned: %v", l)
	}
	// Not a measurement (see BenchmarkKillAtDeadline): 1s past the deadline
	// is far from the 5s grace the kill would otherwise have waited, and far
	// above the few milliseconds a kill takes even on a loaded machine.
	if late := returned.Sub(at); late > time.Second {
		t.Fatalf("Run returned %s after the deadline: the grace, not the deadline, governed", late)
	}
}

// The supervisor enforces the lease deadline by itself, and hears of a
// renewal that moves it.
func TestRunDeadlineWithoutCancel(t *testing.T) {
	t.Run("killed at the deadline", func(t *testing.T) {
		out := &lockedBuffer{}
		g := newGuest(t, Config{Command: sh(`echo $$; exec sleep 300`), Stdout: out})
		at := time.Now().Add(300 * time.Millisecond)
		err := await(t, start(g, t.Context(), func() time.Time { return at }))
		if !errors.Is(err, ErrStopped) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "killed at the lease deadline") {
			t.Fatalf("Run = %v; want ErrStopped, killed at the lease deadline", err)
		}
	})
	t.Run("a renewal moves it", func(t *testing.T) {
		g := newGuest(t, Config{Command: sh(`sleep 1.5`)})
		t0 := time.Now()
		var calls atomic.Int32
		// The first read (Run's, at the start) says 1s; every later one, an
		// hour: the lease was renewed. deadlinePoll (100ms) passes it on in
		// time; without it the supervisor would kill at 1s.
		renewed := func() time.Time {
			if calls.Add(1) == 1 {
				return t0.Add(time.Second)
			}
			return t0.Add(time.Hour)
		}
		if err := await(t, start(g, t.Context(), renewed)); err != nil {
			t.Fatalf("Run = %v; want the renewed lease to let it finish", err)
		}
	})
}

// What a command leaves behind when it exits is stopped with it, even what
// called setsid or ignores SIGTERM (killed after the grace), and Run
// returns only after that, with the command's own result.
func TestRunStopsLeftovers(t *testing.T) {
	out := &lockedBuffer{}
	dir := t.TempDir()
	// It waits for the test to record its descendants, then exits 0.
	script := `sleep 300 & echo $!
setsid sh -c 'echo $$ > "$1/p"; exec sleep 300' sh "$1" &
sh -c 'trap "" TERM; echo $$ > "$1/q"; exec sleep 300' sh "$1" &
while [ ! -s "$1/p" ] || [ ! -s "$1/q" ]; do sleep 0.01; done
cat "$1/p" "$1/q"
while [ ! -e "$1/go" ]; do sleep 0.01; done`
	g := newGuest(t, Config{Command: sh(script, dir), Stdout: out, Grace: 300 * time.Millisecond})
	done := start(g, t.Context(), nil)
	procs := recordProcs(t, 3, out.String)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := await(t, done); err != nil {
		t.Fatal(err)
	}
	if l := living(procs); l != nil {
		t.Fatalf("left behind after Run returned: %v", l)
	}
}

// SIGTERM reaches every descendant, also one outside the command's group
// whose parent lives (so it is signalled through a pidfd), and the grace
// holds for it: the command's own exit does not cut it short.
func TestRunTermReachesEveryDescendant(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("needs perl (Debian's perl-base) to leave the group without forking")
	}
	dir := t.TempDir()
	scripts := map[string]string{
		// x: in the command's group; outlives SIGTERM while c runs.
		"x.sh": `trap 'echo "x got TERM" >&2' TERM
perl -e 'setpgrp(0, 0); exec @ARGV' sh "$1/c.sh" "$1"`,
		// c: x's child in a group of its own; takes 200ms to handle SIGTERM.
		"c.sh": `trap 'sleep 0.2; echo "got TERM" > "$1/term"; exit 0' TERM
echo $$ > "$1/pid"
while :; do sleep 0.05; done`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := &lockedBuffer{}
	g := newGuest(t, Config{Command: sh(`sh "$1/x.sh" "$1" & while [ ! -s "$1/pid" ]; do sleep 0.01; done; echo ready; wait`, dir), Stdout: out, Grace: 3 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	done := start(g, ctx, nil)
	if !waitFor(settle, func() bool { return strings.Contains(out.String(), "ready") }) {
		t.Fatal("the command did not start its descendants")
	}
	c := recordProcs(t, 1, fileLines(filepath.Join(dir, "pid")))[0]
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.ppid)); !strings.Contains(string(cmdline), "x.sh") {
		t.Fatalf("c's parent is %q, not x: the test would not need a pidfd", cmdline)
	}
	cancel()
	if err := await(t, done); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v; want ErrStopped", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "term")); err != nil || string(b) != "got TERM\n" {
		t.Fatalf("the descendant outside the group did not finish handling SIGTERM: %q, %v", b, err)
	}
}

// tree7 starts a command with descendants of every kind and writes their
// pids to $1/pids: itself, a background child, a grandchild of a
// grandchild, one that called setsid, and one that daemonized (setsid in
// an orphan).
const tree7 = `echo $$ >> "$1/pids"
sleep 300 & echo $! >> "$1/pids"
( ( sleep 300 & echo $! >> "$1/pids"; wait ) & echo $! >> "$1/pids"; wait ) & echo $! >> "$1/pids"
setsid sh -c 'echo $$ >> "$1/pids"; exec sleep 300' sh "$1" &
( setsid sh -c 'echo $$ >> "$1/pids"; exec sleep 300' sh "$1" & )
wait`

// startDaemon runs the stand-in daemon (see TestMain) with script.
func startDaemon(t *testing.T, script, arg, deadline string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts child processes (skipped with -short)")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), daemonEnv+"="+script, daemonArgEnv+"="+arg, daemonDeadlineEnv+"="+deadline)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stderr
}

// kill -9 of the daemon: the supervisor kills the whole tree.
func TestDaemonKilledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	daemon, _ := startDaemon(t, tree7, dir, "")
	procs := recordProcs(t, 7, fileLines(filepath.Join(dir, "pids")))
	sup, ok := readProc(procs[0].ppid)
	if !ok {
		t.Fatal("no supervisor")
	}
	procs = append(procs, sup)
	t.Cleanup(func() { killProcs(procs) })
	if err := daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = daemon.Wait()
	if !waitFor(time.Second, func() bool { return living(procs) == nil }) {
		t.Fatalf("1s after kill -9 of the daemon, still running: %v", living(procs))
	}
}

// A frozen daemon (SIGSTOP, a long pause) cannot stop its command; the
// supervisor kills it at the lease deadline on its own.
func TestFrozenDaemonCommandDiesAtDeadline(t *testing.T) {
	dir := t.TempDir()
	daemon, stderr := startDaemon(t, `echo $$ >> "$1/pids"; while :; do sleep 0.05; done`, dir, "1s")
	procs := recordProcs(t, 1, fileLines(filepath.Join(dir, "pids")))
	if err := daemon.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := func() bool { p, ok := readProc(daemon.Process.Pid); return ok && p.state == 'T' }
	if !waitFor(settle, stopped) {
		t.Fatal("the daemon did not stop")
	}
	if !waitFor(settle, func() bool { return living(procs) == nil }) {
		t.Fatal("the command outlived its lease deadline while the daemon was frozen")
	}
	if !stopped() {
		t.Fatal("the daemon ran again before its command died: this proves nothing")
	}
	if err := daemon.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Wait(); err == nil || !strings.Contains(stderr.String(), "killed at the lease deadline") {
		t.Fatalf("daemon: %v, %q; want Run's error: killed at the lease deadline", err, stderr.String())
	}
}

// The documented limit: kill -9 of the supervisor itself ends the command
// (its parent-death signal) but not what the command started.
func TestSupervisorKilledLimit(t *testing.T) {
	dir := t.TempDir()
	g := newGuest(t, Config{Command: sh(`echo $$ >> "$1/pids"; sleep 300 >/dev/null 2>&1 & echo $! >> "$1/pids"; wait`, dir)})
	done := start(g, t.Context(), nil)
	procs := recordProcs(t, 2, fileLines(filepath.Join(dir, "pids")))
	if err := syscall.Kill(procs[0].ppid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := await(t, done); err == nil || !strings.Contains(err.Error(), "without a report") {
		t.Fatalf("Run = %v; want: the supervisor ended without a report", err)
	}
	if !waitFor(settle, func() bool { return !alive(procs[0]) }) {
		t.Fatal("the command outlived its supervisor")
	}
	if !alive(procs[1]) {
		t.Fatal("the background child died too: the stated limit (docs/queue.md) is wrong, update it")
	}
}
