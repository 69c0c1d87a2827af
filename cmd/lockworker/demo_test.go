package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/tail"
)

// runDemoBinary runs `lockworker demo args...` (the binary TestMain built)
// and returns its output and exit error. interrupt, if set, is called with
// the running command and the output so far each 20ms.
func runDemoBinary(t *testing.T, limit time.Duration, interrupt func(cmd *exec.Cmd, out string) bool, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"demo"}, args...)...)
	// A demo killed with -9 cannot remove its Redis's temporary directory:
	// give it one of the test's, which the test removes.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
	out := &tail.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sent := false
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				t.Fatalf("the demo did not finish within %s:\n%s", limit, out)
			}
			return out.String(), err
		case <-time.After(20 * time.Millisecond):
			if interrupt != nil && !sent {
				sent = interrupt(cmd, out.String())
			}
		}
	}
}

var pidRE = regexp.MustCompile(`pid (\d+)`)

// demoPIDs returns every PID the demo printed (Redis and replicas).
func demoPIDs(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, m := range pidRE.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// assertGone fails for every PID that still names a live process. A
// zombie counts as gone: it runs nothing and holds no port.
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) || (err == nil && strings.Contains(string(b), ") Z ")) {
			continue
		}
		t.Errorf("pid %d survived the demo: %s", pid, b)
	}
}

func TestDemo(t *testing.T) {
	processTest(t)
	out, err := runDemoBinary(t, 90*time.Second, nil)
	t.Logf("demo output:\n%s", out)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	for _, want := range []string{
		"▸ Redis: redis-server on 127.0.0.1:",
		"▸ replicas: worker-1 (pid",
		"enqueued 6 jobs",
		"leads with fencing token",
		"is doing heavy work",
		"▸ SIGTERM → worker-",
		"after the SIGTERM (graceful handover)",
		"exited with status 0",
		"▸ kill -9 → worker-",
		"after the kill (failover once the lease ran out)",
		"finished the queue: 6 of 6 jobs committed",
		"timeline (seconds since the demo started)",
		"handover after SIGTERM:",
		"failover after kill -9:",
		"✓ cleaned up",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	pids := demoPIDs(t, out)
	if len(pids) != 4 {
		t.Fatalf("found %d PIDs in the output, want 4 (Redis and 3 replicas)", len(pids))
	}
	assertGone(t, pids)
}

// TestDemoPartitions: --partitions 8 tells the story of three replicas
// sharing eight partitions: the share-out, a SIGTERM whose partitions are
// led elsewhere, a kill -9 whose partitions are taken once their leases
// ran out, keyed jobs finished; everything stopped.
func TestDemoPartitions(t *testing.T) {
	processTest(t)
	out, err := runDemoBinary(t, 120*time.Second, nil, "--partitions", "8")
	t.Logf("demo output:\n%s", out)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	for _, want := range []string{
		"3 replicas share 8 partitions",
		"▸ replicas: worker-1 (pid",
		"every partition has one owner, shared to within one: worker-1 ",
		"enqueued 12 jobs with `lockworker enqueue --key`",
		"customer-1 → p",
		"▸ SIGTERM → worker-",
		"partitions are led elsewhere (graceful handover): p",
		"the two left share the 8 partitions: worker-",
		"▸ kill -9 → worker-",
		"partitions are led elsewhere (failover once each lease ran out): p",
		"finished the queue: 12 of 12 jobs committed, 0 pending, 0 dead letters",
		"timeline (seconds since the demo started)",
		"handover after SIGTERM:",
		"failover after kill -9:",
		"✓ cleaned up",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Balanced: 3, 3 and 2 partitions, then 4 and 4.
	if m := regexp.MustCompile(`shared to within one: worker-\d (\d) .*, worker-\d (\d) .*, worker-\d (\d) `).FindStringSubmatch(out); m == nil ||
		m[1]+m[2]+m[3] != "233" && m[1]+m[2]+m[3] != "323" && m[1]+m[2]+m[3] != "332" {
		t.Errorf("first share-out %v, want 3, 3 and 2", m)
	}
	if !regexp.MustCompile(`the two left share the 8 partitions: worker-\d 4 .*, worker-\d 4 `).MatchString(out) {
		t.Error("the two left do not have 4 partitions each")
	}
	pids := demoPIDs(t, out)
	if len(pids) != 4 {
		t.Fatalf("found %d PIDs in the output, want 4 (Redis and 3 replicas)", len(pids))
	}
	assertGone(t, pids)
}

// TestDemoCtrlC interrupts the demo while replicas run and checks that it
// stops every one of them, and its Redis, and says so.
func TestDemoCtrlC(t *testing.T) {
	processTest(t)
	out, err := runDemoBinary(t, 60*time.Second, func(cmd *exec.Cmd, out string) bool {
		if !strings.Contains(out, "leads with fencing token") {
			return false
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		return true
	})
	t.Logf("demo output:\n%s", out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit = %v, want status 130 after Ctrl-C", err)
	}
	if !strings.Contains(out, "interrupted") {
		t.Error("output does not say the demo was interrupted")
	}
	assertGone(t, demoPIDs(t, out))
}

// TestDemoKilled kill -9s the demo itself: the kernel kills its replicas
// and its Redis (Pdeathsig).
func TestDemoKilled(t *testing.T) {
	processTest(t)
	out, _ := runDemoBinary(t, 60*time.Second, func(cmd *exec.Cmd, out string) bool {
		if !strings.Contains(out, "leads with fencing token") {
			return false
		}
		_ = cmd.Process.Kill()
		return true
	})
	pids := demoPIDs(t, out)
	if len(pids) != 4 {
		t.Fatalf("found %d PIDs in the output, want 4:\n%s", len(pids), out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive bool
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				alive = alive || !bytes.Contains(b, []byte(") Z "))
			}
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			assertGone(t, pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDemoRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--redis", "nope"}, {"extra"}, {"--nope"}, {"--partitions", "0"}, {"--partitions", "1025"}, {"--partitions", "x"}} {
		var out bytes.Buffer
		err := runCLI(t, append([]string{"demo"}, args...), nil, &out)
		if exitCode(err) != 2 {
			t.Errorf("demo %v: %v, want a usage error (exit 2)", args, err)
		}
	}
}

// TestDemoWithoutRedisServer: with no redis-server on PATH the demo stops
// at once, says how to install it, exits 1 and leaves nothing running.
func TestDemoWithoutRedisServer(t *testing.T) {
	processTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo")
	cmd.Env = []string{"PATH=" + t.TempDir()} // no redis-server here
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("demo without redis-server: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"redis-server not found in PATH", "apt-get install -y redis-server", "make demo"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "replicas:") {
		t.Errorf("replicas were started without a Redis:\n%s", out)
	}
}
