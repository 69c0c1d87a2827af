package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// binary is the lockworker built once for the process-level tests.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // the unit tier: processTest skips whatever would use the binary
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "lockworker-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lockworker")
	// -tags faults: LOCKWORKER_FAULTS can inject what no real handler does
	// on demand (internal/daemon/faults.go); unset, it changes nothing.
	build := exec.Command("go", "build", "-tags", "faults", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lockworker:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	// run() is also called in-process (enqueue, status, ...): it must leave
	// no goroutine behind.
	if code == 0 {
		// toxiproxy v2.12 leaves a toxic stub's pipe blocked after a
		// "timeout" toxic (a black-holed link) is removed with data in
		// flight; it is the library's goroutine, not ours.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// processTest marks a test that starts processes (lockworker, redis-server,
// the demo, a store): -short skips it, and it runs in parallel with the
// others, each owning its ports, redis-servers, directories and
// environment (passed per process, never t.Setenv).
func processTest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes (skipped with -short)")
	}
	t.Parallel()
}

// worker is one lockworker process owned by a test.
type worker struct {
	t    *testing.T
	name string
	port int
	cmd  *exec.Cmd
	out  *tail.Buffer
	done chan struct{}
	err  error // set before done is closed
}

// runCLI calls run as main would, with env as the whole environment and
// an empty stdin.
func runCLI(t *testing.T, args, env []string, out io.Writer) error {
	t.Helper()
	return run(t.Context(), args, config.Getenv(env), strings.NewReader(""), out, out)
}

// fastEnv is a configuration that makes every phase short.
// keys names the keys of the LOCK_KEY the tests' replicas use (fastEnv
// leaves the default).
func keys(t *testing.T) keyspace.Base {
	t.Helper()
	cfg, err := config.Load(config.Getenv(fastEnv("redis://127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyspace.New(cfg.LockKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func fastEnv(redisURL string) []string {
	return []string{
		"REDIS_URLS=" + redisURL,
		"LOCK_TTL=2s", "RENEW_INTERVAL=400ms", "RETRY_INTERVAL=500ms",
		"SHUTDOWN_TIMEOUT=5s", "WORK_DURATION=50ms", "LOG_LEVEL=debug",
	}
}

func startWorker(t *testing.T, name string, env ...string) *worker {
	t.Helper()
	w := &worker{t: t, name: name, port: redistest.FreePort(t), out: &tail.Buffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(binary)
	w.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "WORKER_ID=" + name, "PORT=" + strconv.Itoa(w.port)}, env...)
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Kill()
		<-w.done
		if t.Failed() {
			t.Logf("--- output of %s ---\n%s", w.name, w.out)
		}
	})
	return w
}

type status struct {
	WorkerID string `json:"workerId"`
	State    string `json:"state"`
	Leader   bool   `json:"leader"`
	Token    int64  `json:"token"`
	LockKey  string `json:"lockKey"`
	Mode     string `json:"mode"`
	Holder   struct {
		Held     bool   `json:"held"`
		WorkerID string `json:"workerId"`
		Token    int64  `json:"token"`
	} `json:"holder"`
	Leads []struct {
		Partition int   `json:"partition"`
		Token     int64 `json:"token"`
	} `json:"leads"`
	Lanes []struct {
		Partition int    `json:"partition"`
		State     string `json:"state"`
		Token     int64  `json:"token"`
		Reason    string `json:"reason"`
	} `json:"lanes"`
	Schedules []figures.Schedule `json:"schedules"`
}

// namesLeader says w's /status names leader, with its token, as the
// lock's holder, and as why its one lane does not lead.
func (w *worker) namesLeader(leader *worker) bool {
	s, ok := w.status()
	l, lok := leader.status()
	return ok && lok && l.Leader && s.Holder.Held && s.Holder.WorkerID == leader.name && s.Holder.Token == l.Token &&
		len(s.Lanes) == 1 && strings.HasPrefix(s.Lanes[0].Reason, fmt.Sprintf("held by %s (token %d) until ", leader.name, l.Token))
}

// status returns the worker's /status, or ok=false if it does not answer.
func (w *worker) status() (status, bool) {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/status", w.port))
	if err != nil {
		return status{}, false
	}
	defer resp.Body.Close()
	var s status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return status{}, false
	}
	return s, true
}

func (w *worker) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		w.t.Fatalf("signal %v to %s: %v", sig, w.name, err)
	}
}

// exited waits up to limit for the process to end and returns its error.
func (w *worker) exited(limit time.Duration) (error, bool) {
	select {
	case <-w.done:
		return w.err, true
	case <-time.After(limit):
		return nil, false
	}
}

// leaders returns the workers whose /status says they lead.
func leaders(ws ...*worker) []*worker {
	var out []*worker
	for _, w := range ws {
		if s, ok := w.status(); ok && s.Leader {
			out = append(out, w)
		}
	}
	return out
}

// lines returns the worker's log lines.
func (w *worker) lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(w.out.String()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// enqueueN adds n jobs with `lockworker enqueue`-equivalent code.
func enqueueN(t *testing.T, env []string, n int) {
	t.Helper()
	for i := range n {
		var out strings.Builder
		if err := runCLI(t, []string{"enqueue", fmt.Sprintf("job-%04d", i)}, env, &out); err != nil {
			t.Fatalf("enqueue: %v\n%s", err, out.String())
		}
	}
}
