package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// serveLimited serves h on a loopback port through a ConnLimiter of lim,
// with a header timeout long enough that no connection of the test times
// out.
func serveLimited(t *testing.T, lim ConnLimits, h http.Handler) (*ConnLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewConnLimiter(lim)
	if err != nil {
		t.Fatal(err)
	}
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
	return dialFrom(t, addr, "127.0.0.1")
}

// dialFrom connects to addr from the loopback address from.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// halfOpen connects from the loopback address from and sends the start
// of a request whose headers never end.
func halfOpen(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	c := dialFrom(t, addr, from)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nX: "); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedByServer waits (10 s at most) for the server to close c: EOF, or
// a reset when the server closed it with its bytes unread.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// get asks path on c and returns the answer, or an empty one (status 0)
// when c was closed.
func get(t *testing.T, c net.Conn, path string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Logf("GET %s: %v", path, err)
		return &http.Response{Header: http.Header{}}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Logf("GET %s: %v", path, err)
		return &http.Response{Header: http.Header{}}
	}
	_ = resp.Body.Close()
	return resp
}

func testHandler(t *testing.T) http.Handler {
	t.Helper()
	return mustNew(t, Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} }})
}

// TestConnLimiterEvictsTheLongestIdle: at the cap, a connection whose
// request is in closes the longest-idle keep-alive and is served.
func TestConnLimiterEvictsTheLongestIdle(t *testing.T) {
	l, addr := serveLimited(t, ConnLimits{MaxConns: 2}, testHandler(t))
	idleCount := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.idle)
	}
	idle1, idle2 := dial(t, addr), dial(t, addr)
	for i, c := range []net.Conn{idle1, idle2} {
		if code := get(t, c, "/healthz").StatusCode; code != http.StatusOK {
			t.Fatalf("healthz: %d", code)
		}
		// net/http marks a connection idle just after its answer is
		// sent: wait for it, so idle1 is the longest idle.
		poll.Until(t, 10*time.Second, "the connection idle", func() bool { return idleCount() == i+1 })
	}
	third := dial(t, addr)
	if code := get(t, third, "/status").StatusCode; code != http.StatusOK {
		t.Fatalf("third connection's /status: %d, want 200", code)
	}
	if !closedByServer(t, idle1) {
		t.Fatal("the longest-idle connection was not closed")
	}
	if code := get(t, idle2, "/status").StatusCode; code != http.StatusOK {
		t.Fatalf("idle2 kept: %d", code)
	}
	if serving, pending := l.Open(); serving != 2 || pending != 0 {
		t.Errorf("open: %d serving, %d pending; want 2 and 0", serving, pending)
	}
}

// TestConnLimiterAnswersProbesWhenEveryPlaceIsBusy: with every place
// held by a request being served, a new connection's probes answer 200
// and anything else 503 with Retry-After, once: the connection is
// closed after its answer.
func TestConnLimiterAnswersProbesWhenEveryPlaceIsBusy(t *testing.T) {
	release := make(chan struct{})
	h := testHandler(t)
	l, addr := serveLimited(t, ConnLimits{MaxConns: 2}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release) }) // before the server closes
	for range 2 {
		if _, err := io.WriteString(dial(t, addr), "GET /block HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 10*time.Second, "both places busy", func() bool { s, _ := l.Open(); return s == 2 })

	resp := get(t, dial(t, addr), "/status")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("/status with every place busy: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		c := dial(t, addr)
		if resp := get(t, c, path); resp.StatusCode != http.StatusOK || !resp.Close {
			t.Fatalf("%s with every place busy: %d (close %t), want 200 and Connection: close", path, resp.StatusCode, resp.Close)
		}
		if !closedByServer(t, c) {
			t.Fatalf("%s: the connection without a place was kept open", path)
		}
	}
	if serving, _ := l.Open(); serving != 2 {
		t.Errorf("%d serving, want the 2 busy ones", serving)
	}
}

// TestConnLimiterHalfOpenHoldsNoPlace: connections whose headers never
// end hold no place of MaxConns; one address holds at most
// MaxPendingPerClient of them, its oldest closed first; when every
// pending place is taken, the oldest of any address is closed; a
// finished request from another address is served throughout.
func TestConnLimiterHalfOpenHoldsNoPlace(t *testing.T) {
	l, addr := serveLimited(t, ConnLimits{MaxConns: 1, MaxPending: 4, MaxPendingPerClient: 2}, testHandler(t))

	var flood []net.Conn
	for range 6 {
		flood = append(flood, halfOpen(t, addr, "127.0.0.1"))
	}
	// Each past the second closes its address's oldest: the 6th closed
	// the 4th, so once the 4th reads closed the 6th is counted.
	for i, c := range flood[:4] {
		if !closedByServer(t, c) {
			t.Fatalf("half-open connection %d of one address kept, want the oldest closed past 2", i+1)
		}
	}
	if serving, pending := l.Open(); serving != 0 || pending != 2 {
		t.Fatalf("open: %d serving, %d pending; want 0 and 2", serving, pending)
	}
	if code := get(t, dialFrom(t, addr, "127.0.0.2"), "/status").StatusCode; code != http.StatusOK {
		t.Fatalf("/status from another address beside the half-open ones: %d, want 200", code)
	}

	// Two more from a third address fill the pending places; the next
	// connection, from a fourth, closes the oldest of all: the 5th.
	halfOpen(t, addr, "127.0.0.3")
	halfOpen(t, addr, "127.0.0.3")
	if code := get(t, dialFrom(t, addr, "127.0.0.4"), "/healthz").StatusCode; code != http.StatusOK {
		t.Fatalf("/healthz with every pending place taken: %d, want 200", code)
	}
	if !closedByServer(t, flood[4]) {
		t.Fatal("the oldest pending connection was not closed for a new address")
	}
	if serving, pending := l.Open(); serving != 1 || pending != 3 {
		t.Errorf("open: %d serving, %d pending; want 1 and 3", serving, pending)
	}
}

func TestConnLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		lim  ConnLimits
		want string
	}{
		{ConnLimits{}, "MaxConns"},
		{ConnLimits{MaxConns: 1, MaxPending: -1}, "MaxPending must"},
		{ConnLimits{MaxConns: 1, MaxPending: 4, MaxPendingPerClient: 5}, "MaxPendingPerClient"},
		{ConnLimits{MaxConns: 1, MaxPendingPerClient: -1}, "MaxPendingPerClient"},
	} {
		if _, err := NewConnLimiter(tc.lim); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.lim, err, tc.want)
		}
	}
	for _, want := range []ConnLimits{
		{MaxConns: 1024, MaxPending: 4096, MaxPendingPerClient: 256},
		{MaxConns: 32, MaxPending: 128, MaxPendingPerClient: 64},
		{MaxConns: 2, MaxPending: 8, MaxPendingPerClient: 8},
	} {
		l, err := NewConnLimiter(ConnLimits{MaxConns: want.MaxConns})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Limits(); got != want {
			t.Errorf("defaults: %+v, want %+v", got, want)
		}
	}
}

func TestConnsWithin(t *testing.T) {
	for _, tc := range []struct {
		descriptors uint64
		max, want   int
	}{
		{10240, 1024, 1024},
		{5000, 1024, 1000},
		{512, 1024, 102},
		{3, 1024, 1},
	} {
		if got := ConnsWithin(tc.descriptors, tc.max); got != tc.want {
			t.Errorf("ConnsWithin(%d, %d) = %d, want %d", tc.descriptors, tc.max, got, tc.want)
		}
	}
}
