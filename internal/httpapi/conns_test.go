package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// serveLimited serves h on a loopback port through a ConnLimiter of
// maxConns, with a header timeout long enough that no connection of the
// test times out.
func serveLimited(t *testing.T, maxConns int, h http.Handler) (*ConnLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewConnLimiter(maxConns)
	srv := &http.Server{Handler: h}
	l.Configure(srv)
	srv.ReadHeaderTimeout, srv.ReadTimeout = time.Minute, time.Minute
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return l, ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// get asks path on c and returns the status, or 0 when c was closed.
func get(t *testing.T, c net.Conn, path string) (int, http.Header) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestConnLimiter: at the cap, a new connection evicts the longest-idle
// keep-alive; with none idle (every slot busy reading a request) it gets
// a spare that answers only the probes, 503 with Retry-After otherwise;
// past the spares it is closed at once.
func TestConnLimiter(t *testing.T) {
	h := mustNew(t, Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }})
	l, addr := serveLimited(t, 2, h)

	idleCount := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.idle)
	}
	idle1, idle2 := dial(t, addr), dial(t, addr)
	for i, c := range []net.Conn{idle1, idle2} {
		if code, _ := get(t, c, "/healthz"); code != http.StatusOK {
			t.Fatalf("healthz: %d", code)
		}
		// net/http marks a connection idle just after its answer is
		// sent: wait for it, so idle1 is the longest idle.
		poll.Until(t, 10*time.Second, "the connection idle", func() bool { return idleCount() == i+1 })
	}
	// A third connection evicts idle1, the longest idle.
	third := dial(t, addr)
	if code, _ := get(t, third, "/status"); code != http.StatusOK {
		t.Fatalf("third connection's /status: %d, want 200", code)
	}
	_ = idle1.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle1.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the evicted connection reads %v, want EOF", err)
	}
	if code, _ := get(t, idle2, "/status"); code != http.StatusOK {
		t.Fatalf("idle2 kept: %d", code)
	}

	poll.Until(t, 10*time.Second, "both connections idle", func() bool { return idleCount() == 2 })
	// Two connections busy sending their headers fill the cap with none idle.
	busy := []net.Conn{dial(t, addr), dial(t, addr)}
	for _, c := range busy {
		if _, err := io.WriteString(c, "GET /status HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 10*time.Second, "the busy connections counted, the idle ones evicted", func() bool { return l.Open() == 2 })
	code, hdr := get(t, dial(t, addr), "/status")
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Fatalf("/status on a spare: %d (Retry-After %q), want 503 with Retry-After", code, hdr.Get("Retry-After"))
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, dial(t, addr), path); code != http.StatusOK {
			t.Fatalf("%s on a spare: %d, want 200", path, code)
		}
	}
	// Every spare held by a connection that sends nothing: the next is
	// closed. (The spares above are closed by the server after their
	// answer: wait for that first.)
	poll.Until(t, 10*time.Second, "the spares given back", func() bool { return l.Open() == 2 })
	for range ProbeConns {
		dial(t, addr)
	}
	poll.Until(t, 10*time.Second, "every spare taken", func() bool { return l.Open() == 2+ProbeConns })
	if code, _ := get(t, dial(t, addr), "/healthz"); code != 0 {
		t.Fatalf("past the spares: %d, want the connection closed", code)
	}
}
