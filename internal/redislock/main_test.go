package redislock

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newLocker builds a Locker over the given clients; mod adjusts the config.
func newLocker(t *testing.T, nodes []*redis.Client, mod func(*Config)) *Locker {
	t.Helper()
	cfg := Config{Keys: keys, TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond}
	for _, c := range nodes {
		cfg.Nodes = append(cfg.Nodes, c)
		cfg.NodeNames = append(cfg.NodeNames, c.Options().Addr)
	}
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// admin is a plain client for inspecting and arranging a server's keys.
func admin(t *testing.T, s *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// warmClient is a client for addr with idle, initialised connections, so a
// command issued while the server is frozen (or its replies are dropped)
// goes out on a ready connection: a fresh one would stall in its HELLO
// handshake and send nothing. Four blocking commands at once make the pool
// open and initialise four connections.
func warmClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _ = c.Do(t.Context(), "BLPOP", "lw:warm", "0.1").Err() }) // Redis >= 6 takes a decimal timeout
	}
	wg.Wait()
	if n := c.PoolStats().IdleConns; n < 4 {
		t.Fatalf("%d idle connections, want 4", n)
	}
	return c
}

// subscribe subscribes to the test lock's release channel on c and returns the
// message channel once the subscription is confirmed.
func subscribe(t *testing.T, c *redis.Client) <-chan *redis.Message {
	t.Helper()
	ps := c.Subscribe(t.Context(), keys.ReleasedChannel())
	if _, err := ps.Receive(t.Context()); err != nil { // the subscribe confirmation
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps.Channel()
}

func receive(t *testing.T, ch <-chan *redis.Message, within time.Duration) *redis.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(within):
		t.Fatalf("no release notice within %s", within)
		return nil
	}
}

// noNotice fails the test if a release notice is waiting on notices, the
// subscription of c. Messages on one node arrive in publish order: a
// notice published before this call would come before the sentinel.
func noNotice(t *testing.T, c *redis.Client, notices <-chan *redis.Message) {
	t.Helper()
	if err := c.Publish(t.Context(), keys.ReleasedChannel(), "sentinel").Err(); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, notices, 5*time.Second); m.Payload != "sentinel" {
		t.Fatalf("got release notice %q from a failed attempt", m.Payload)
	}
}

// proxy forwards TCP to a target; with drop set it swallows every reply,
// so requests are applied but their answers are lost.
type proxy struct {
	ln     net.Listener
	target string
	drop   atomic.Bool

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() {
			_, _ = io.Copy(out, in)
			_ = out.Close()
		})
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 && !p.drop.Load() {
					if _, werr := in.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = in.Close()
		})
	}
}

// clock is an injectable Now that can be moved forward.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
