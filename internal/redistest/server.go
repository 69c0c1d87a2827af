package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
)

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	Port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Options tune a server. The zero value is an in-memory server.
type Options struct {
	// AppendOnly turns on AOF with appendfsync always.
	AppendOnly bool
	// Args are extra redis-server arguments, e.g. "--requirepass", "x".
	Args []string
}

// Start starts a redis-server on a free loopback port and registers its
// shutdown with t.Cleanup. It fails the test when redis-server is missing.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	return StartOnPort(t, FreePort(t), opts)
}

// StartOnPort is Start on a given port, for a test that points a client at
// a port before any server listens there.
func StartOnPort(t testing.TB, port int, opts Options) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redistest: redis-server not found (make test installs it): %v", err)
	}
	s := &Server{t: t, Port: port, dir: t.TempDir()}
	s.args = []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	if opts.AppendOnly {
		s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		s.args = append(s.args, "--appendonly", "no")
	}
	s.args = append(s.args, opts.Args...)
	s.start()
	t.Cleanup(s.Kill)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Client returns a go-redis client for the server, closed at test end.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) start() {
	s.t.Helper()
	cmd := exec.Command("redis-server", s.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	if err := s.waitReady(10 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.t.Fatalf("redistest: redis-server on port %d not ready: %v\n%s", s.Port, err, log)
	}
}

func (s *Server) waitReady(limit time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// Kill stops the server with SIGKILL and waits for it. Safe to call twice.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process must run to die cleanly
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Restart kills the server and starts it again on the same port with the
// same data directory (so an AOF, if on, is replayed).
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Freeze sends SIGSTOP and returns once every thread of the server has
// stopped: it keeps its sockets but answers nothing.
func (s *Server) Freeze() {
	s.signal(syscall.SIGSTOP)
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	if !fleet.WaitStopped(pid, 5*time.Second) {
		s.t.Fatalf("redistest: redis-server on port %d did not stop within 5s of SIGSTOP", s.Port)
	}
}

// Thaw sends SIGCONT to a frozen server.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redistest: signal %v to a server that is not running", sig)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// FreePort asks the kernel for a free loopback TCP port. It never returns
// 6379, the port a developer's own Redis may hold.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 {
			return port
		}
	}
	t.Fatal(errors.New("redistest: no free port"))
	return 0
}

// String names the server in test logs.
func (s *Server) String() string { return fmt.Sprintf("redis-server@%d", s.Port) }
