package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/redisopt"
)

// Server is one redis-server process owned by a test, started by
// package fleet (the starter the demo and the chaos suite use too).
type Server struct {
	t    testing.TB
	Port int
	spec fleet.RedisSpec

	mu    sync.Mutex
	fleet *fleet.Fleet
	r     *fleet.Redis
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
	skipShort(t)
	s := &Server{t: t, Port: port, spec: fleet.RedisSpec{
		Name: "redis-" + strconv.Itoa(port), Port: port, Dir: t.TempDir(),
		AppendOnly: opts.AppendOnly, Args: opts.Args,
	}}
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
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *Server) start() {
	s.t.Helper()
	f := fleet.New(context.Background())
	r, err := f.StartRedis(context.Background(), s.spec)
	if err != nil {
		_ = f.Close()
		s.t.Fatalf("redistest: %v (make test installs redis-server)", err)
	}
	s.mu.Lock()
	s.fleet, s.r = f, r
	s.mu.Unlock()
}

// Kill stops the server with SIGKILL and waits for it. Safe to call twice.
func (s *Server) Kill() {
	s.mu.Lock()
	f := s.fleet
	s.fleet, s.r = nil, nil
	s.mu.Unlock()
	if f != nil {
		_ = f.Close() // SIGCONT+SIGKILL, then reaped
	}
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
	s.t.Helper()
	if err := s.running().Pause(); err != nil {
		s.t.Fatalf("redistest: freeze %s: %v", s, err)
	}
}

// Thaw sends SIGCONT to a frozen server.
func (s *Server) Thaw() {
	if r := s.current(); r != nil {
		_ = r.Resume()
	}
}

func (s *Server) current() *fleet.Redis {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r
}

func (s *Server) running() *fleet.Redis {
	s.t.Helper()
	r := s.current()
	if r == nil {
		s.t.Fatalf("redistest: %s is not running", s)
	}
	return r
}

// skipShort skips a test that would start redis-server under -short: the
// unit tier starts no child processes.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("redistest: starts redis-server (skipped with -short)")
	}
}

// FreePort asks the kernel for a free loopback TCP port. It never returns
// 6379, the port a developer's own Redis may hold.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := fleet.FreePort()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return port
}

// String names the server in test logs.
func (s *Server) String() string { return fmt.Sprintf("redis-server@%d", s.Port) }
