package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// The test binary doubles as the fake child: with FLEET_FAKE set it serves
// /status on PORT instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("FLEET_FAKE") {
	case "":
		goleak.VerifyTestMain(m)
	case "replica":
		fakeReplica()
	case "parent":
		fakeParent()
	}
}

// fakeReplica answers /status with leader=FAKE_LEADER, prints "ready",
// and exits 0 on SIGTERM after printing "got SIGTERM" (unless
// FAKE_IGNORE_TERM is set).
func fakeReplica() {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(3)
	}
	leader := os.Getenv("FAKE_LEADER") == "true"
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(statusdoc.Status{WorkerID: os.Getenv("WORKER_ID"), State: "working", Leader: leader, Token: 7})
	}))
	fmt.Println("ready")
	for range terms {
		fmt.Println("got SIGTERM")
		if os.Getenv("FAKE_IGNORE_TERM") == "" {
			os.Exit(0)
		}
	}
}

// fakeParent starts a fake replica through a fleet, prints its PID, and
// waits to be killed: a test of Pdeathsig.
func fakeParent() {
	f := fleet.New(context.Background())
	p, err := f.Start(fleet.Spec{Name: "grandchild", Path: os.Args[0], Env: []string{"FLEET_FAKE=replica"}})
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	fmt.Printf("child-pid %d\n", p.PID())
	select {}
}

func fake(t *testing.T, f *fleet.Fleet, name string, env ...string) *fleet.Process {
	t.Helper()
	skipShort(t)
	p, err := f.Start(fleet.Spec{Name: name, Path: os.Args[0], Env: append([]string{"FLEET_FAKE=replica", "WORKER_ID=" + name}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, name+" ready", func() bool { return strings.Contains(p.Output(), "ready") })
	return p
}

// skipShort skips a test that starts child processes under -short (the
// unit tier).
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts child processes (skipped with -short)")
	}
}

func newFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f := fleet.New(t.Context())
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// gone reports whether no process (not even a zombie) has the PID.
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

func TestStatusAndLeader(t *testing.T) {
	f := newFleet(t)
	a := fake(t, f, "a")
	b := fake(t, f, "b", "FAKE_LEADER=true")
	s, err := a.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.WorkerID != "a" || s.Leader {
		t.Fatalf("a's status = %+v", s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	m, err := fleet.WaitLeader(ctx, f.Processes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Process != b || m.Status.Token != 7 {
		t.Fatalf("leader = %s token %d, want b token 7", m.Name, m.Status.Token)
	}
}

func TestSplitBrainIsReported(t *testing.T) {
	f := newFleet(t)
	fake(t, f, "a", "FAKE_LEADER=true")
	fake(t, f, "b", "FAKE_LEADER=true")
	_, err := fleet.WaitLeader(t.Context(), f.Processes(), 0)
	var sb *fleet.SplitBrainError
	if !errors.As(err, &sb) || len(sb.Leaders) != 2 {
		t.Fatalf("err = %v, want a SplitBrainError with 2 leaders", err)
	}
}

func TestWaitLeaderTimesOut(t *testing.T) {
	f := newFleet(t)
	fake(t, f, "a")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := fleet.WaitLeader(ctx, f.Processes(), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

func TestTerminateExitsCleanly(t *testing.T) {
	f := newFleet(t)
	a := fake(t, f, "a")
	if err := a.Terminate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if !strings.Contains(a.Output(), "got SIGTERM") {
		t.Fatalf("output %q lacks the child's SIGTERM line", a.Output())
	}
	if err := a.Terminate(); !errors.Is(err, fleet.ErrExited) {
		t.Fatalf("signal after exit: %v, want ErrExited", err)
	}
	if !gone(a.PID()) {
		t.Fatal("pid still exists after Wait")
	}
}

func TestKillEndsAProcessThatIgnoresSIGTERM(t *testing.T) {
	f := newFleet(t)
	a := fake(t, f, "a", "FAKE_IGNORE_TERM=1")
	_ = a.Terminate()
	poll.Until(t, 5*time.Second, "SIGTERM seen", func() bool { return strings.Contains(a.Output(), "got SIGTERM") })
	if a.Exited() {
		t.Fatal("exited although it ignores SIGTERM")
	}
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var ee *exec.ExitError
	if err := a.Wait(ctx); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit = %v, want killed by SIGKILL", err)
	}
}

func TestPauseAndResume(t *testing.T) {
	f := newFleet(t)
	a := fake(t, f, "a")
	if err := a.Pause(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := a.Status(ctx)
	cancel()
	if err == nil {
		t.Fatal("a stopped process answered /status")
	}
	if err := a.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Status(t.Context()); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
}

func TestCloseKillsEverythingEvenWhenStopped(t *testing.T) {
	f := fleet.New(t.Context())
	a := fake(t, f, "a", "FAKE_IGNORE_TERM=1")
	b := fake(t, f, "b")
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*fleet.Process{a, b} {
		if !p.Exited() || !gone(p.PID()) {
			t.Fatalf("%s survived Close", p)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := f.Start(fleet.Spec{Name: "late", Path: os.Args[0]}); !errors.Is(err, fleet.ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestContextCancelKillsEverything(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	f := fleet.New(ctx)
	a := fake(t, f, "a")
	cancel()
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("process survived the context")
	}
	poll.Until(t, 5*time.Second, "pid released", func() bool { return gone(a.PID()) })
}

// TestSupervisorDeathKillsChildren kill -9s a process that supervises a
// fleet and checks the kernel killed its child (Pdeathsig).
func TestSupervisorDeathKillsChildren(t *testing.T) {
	skipShort(t)
	f := newFleet(t)
	parent, err := f.Start(fleet.Spec{Name: "parent", Path: os.Args[0], Env: []string{"FLEET_FAKE=parent"}})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	poll.Until(t, 10*time.Second, "grandchild pid", func() bool {
		sc := bufio.NewScanner(strings.NewReader(parent.Output()))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "child-pid "); ok {
				child, _ = strconv.Atoi(v)
			}
		}
		return child > 0
	})
	if gone(child) {
		t.Fatal("grandchild not running")
	}
	if err := parent.Kill(); err != nil {
		t.Fatal(err)
	}
	<-parent.Done()
	// The grandchild is reparented to init (or a subreaper), which reaps it.
	poll.Until(t, 10*time.Second, "grandchild killed by Pdeathsig", func() bool {
		if gone(child) {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		return err == nil && strings.Contains(string(b), ") Z ")
	})
}

func TestStartRedis(t *testing.T) {
	skipShort(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	f := newFleet(t)
	r, err := f.StartRedis(t.Context(), fleet.RedisSpec{AppendOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(c, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$10\r\nappendonly\r\n")
	reply := make([]byte, 64)
	n, _ := c.Read(reply)
	if !strings.Contains(string(reply[:n]), "yes") {
		t.Fatalf("CONFIG GET appendonly = %q, want yes", reply[:n])
	}
	if !strings.HasPrefix(r.URL(), "redis://127.0.0.1:") {
		t.Fatalf("URL = %q", r.URL())
	}
	dir := r.Dir
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp dir still there after Close: %v", err)
	}
	if !gone(r.PID()) {
		t.Fatal("redis-server survived Close")
	}
}

func TestStartRejectsIncompleteSpecs(t *testing.T) {
	f := newFleet(t)
	for _, s := range []fleet.Spec{{Path: os.Args[0]}, {Name: "x"}} {
		if _, err := f.Start(s); err == nil {
			t.Errorf("Start(%+v) succeeded", s)
		}
	}
	if _, err := f.Start(fleet.Spec{Name: "missing", Path: "/nonexistent/lockworker"}); err == nil {
		t.Error("Start of a missing executable succeeded")
	}
}
