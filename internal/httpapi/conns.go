package httpapi

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// The server's timeouts, per route where one differs. A request's headers
// must arrive within ReadHeaderTimeout and its body within ReadTimeout (an
// NDJSON body of 8 MiB over a slow link included); its answer must be
// written within WriteTimeout, except /events, which moves its own
// deadlines per write (see dashboard); a keep-alive connection with no
// request is closed after IdleTimeout.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 30 * time.Second
)

// PendingPerConn is how many connections still sending their first
// request's headers a ConnLimiter admits, by default, per connection of
// MaxConns.
const PendingPerConn = 4

// By default one client address may hold 1/clientShare of the pending
// connections, and no fewer than clientFloor (a browser opens several at
// once; a small MaxConns must not set them against each other).
const (
	clientShare = 16
	clientFloor = 64
)

// ConnLimits are a ConnLimiter's bounds.
type ConnLimits struct {
	// MaxConns bounds the connections that have sent a whole request's
	// headers: those being served and the idle keep-alives
	// (HTTP_MAX_CONNS). Required, at least 1.
	MaxConns int
	// MaxPending bounds the connections that have not: accepted and still
	// sending their first request's headers. Default PendingPerConn ×
	// MaxConns.
	MaxPending int
	// MaxPendingPerClient bounds those from one client address (the
	// connection's; an IPv6 /64 counts as one address). Default
	// MaxPending/16 but at least 64, and at most MaxPending.
	MaxPendingPerClient int
}

// ConnsWithin is the largest MaxConns, at most maxConns, whose
// connections and default pending budget fit in descriptors.
func ConnsWithin(descriptors uint64, maxConns int) int {
	if fit := descriptors / (1 + PendingPerConn); uint64(maxConns) > fit {
		return int(max(fit, 1))
	}
	return maxConns
}

// ConnLimiter bounds a server's open connections, so that a crowd of
// clients cannot take the descriptors the replica's jobs need, and so
// that a connection that has not finished its request headers never
// holds a place a finished one needs.
//
// A new connection is pending until its first request's headers are in:
// it counts against MaxPending and its address's MaxPendingPerClient, not
// against MaxConns. When its address is at its bound, the address's
// oldest pending connection is closed to make room; when every pending
// place is taken, the oldest pending connection of any address is; when
// none can be (every one is being answered), the new one is closed at
// once. One address sending headers that never end (slowloris) thus
// recycles its own places and no one else's.
//
// Once its headers are in, a connection takes one of MaxConns places and
// keeps it, idle keep-alives included, until it is closed. At the cap the
// longest-idle keep-alive is closed to make room (closing an idle
// connection is always allowed in HTTP/1.1: clients retry); when none is
// idle the request is answered without a place: /healthz and /readyz as
// usual, anything else 503 with Retry-After, and the connection is closed
// after its answer. So the probes answer while every place is busy.
//
// It does not bound what one connection costs: the server's timeouts and
// the body bound do. Nor does it share MaxConns between addresses: a
// client whose requests are served holds its places as long as the
// timeouts let it.
type ConnLimiter struct {
	lim ConnLimits

	mu      sync.Mutex
	serving int                        // connections holding a place
	idle    map[*limitedConn]time.Time // those idle between requests, since when
	pending int                        // connections whose headers are not in yet
	waiting list.List                  // those of them that may be closed, oldest first
	clients map[netip.Prefix]*client   // the pending connections by address
}

// client is one address's pending connections.
type client struct {
	pending int
	waiting list.List // those that may be closed, oldest first
}

// NewConnLimiter returns a limiter for lim, its defaults filled in.
func NewConnLimiter(lim ConnLimits) (*ConnLimiter, error) {
	if lim.MaxConns < 1 {
		return nil, fmt.Errorf("httpapi: MaxConns must be at least 1, got %d", lim.MaxConns)
	}
	if lim.MaxPending == 0 {
		lim.MaxPending = PendingPerConn * lim.MaxConns
	}
	if lim.MaxPendingPerClient == 0 {
		lim.MaxPendingPerClient = min(lim.MaxPending, max(clientFloor, lim.MaxPending/clientShare))
	}
	if lim.MaxPending < 1 {
		return nil, fmt.Errorf("httpapi: MaxPending must be at least 1, got %d", lim.MaxPending)
	}
	if lim.MaxPendingPerClient < 1 || lim.MaxPendingPerClient > lim.MaxPending {
		return nil, fmt.Errorf("httpapi: MaxPendingPerClient must be between 1 and MaxPending (%d), got %d",
			lim.MaxPending, lim.MaxPendingPerClient)
	}
	return &ConnLimiter{lim: lim, idle: map[*limitedConn]time.Time{}, clients: map[netip.Prefix]*client{}}, nil
}

// Limits are the bounds in force, defaults filled in.
func (l *ConnLimiter) Limits() ConnLimits { return l.lim }

// Open is how many connections are open now: serving holds a place
// (idle keep-alives included), pending has not sent its headers yet or is
// being answered without a place.
func (l *ConnLimiter) Open() (serving, pending int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serving, l.pending
}

// Configure sets srv's timeouts and the hooks the limiter needs; srv must
// serve the listener from Listener.
func (l *ConnLimiter) Configure(srv *http.Server) {
	srv.ReadHeaderTimeout = ReadHeaderTimeout
	srv.ReadTimeout = ReadTimeout
	srv.WriteTimeout = WriteTimeout
	srv.IdleTimeout = IdleTimeout
	srv.ConnState = l.connState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if lc, ok := c.(*limitedConn); ok {
			return context.WithValue(ctx, connKey{}, lc)
		}
		return ctx
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, _ := r.Context().Value(connKey{}).(*limitedConn)
		if lc == nil || l.serve(lc) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close") // no place: answer once
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many connections"})
	})
}

type connKey struct{}

// Listener wraps ln so that Accept enforces the limit.
func (l *ConnLimiter) Listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, l: l}
}

type limitedListener struct {
	net.Listener
	l *ConnLimiter
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ll.l.admit(c); lc != nil {
			return lc, nil
		}
		_ = c.Close() // over every bound: its descriptor is freed now
	}
}

// admit counts c in as pending, closing the oldest pending connection of
// its address, or of any, when a bound is reached; nil when c must be
// closed.
func (l *ConnLimiter) admit(c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, l: l, client: clientOf(c.RemoteAddr())}
	var evicted *limitedConn
	defer func() {
		if evicted != nil {
			_ = evicted.Conn.Close() // counted out already; its server goroutine ends on the error
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	full := func() bool {
		cl := l.clients[lc.client]
		return (cl != nil && cl.pending >= l.lim.MaxPendingPerClient) || l.pending >= l.lim.MaxPending
	}
	if cl := l.clients[lc.client]; cl != nil && cl.pending >= l.lim.MaxPendingPerClient {
		evicted = oldest(&cl.waiting)
	} else if l.pending >= l.lim.MaxPending {
		evicted = oldest(&l.waiting)
	}
	if evicted != nil {
		l.countOut(evicted)
	}
	if full() {
		return nil
	}
	cl := l.clients[lc.client]
	if cl == nil {
		cl = &client{}
		l.clients[lc.client] = cl
	}
	l.pending++
	cl.pending++
	lc.inAll, lc.inClient = l.waiting.PushBack(lc), cl.waiting.PushBack(lc)
	return lc
}

// serve gives lc, whose request headers are in, a place, closing the
// longest-idle connection at the cap; false when none is idle.
func (l *ConnLimiter) serve(lc *limitedConn) bool {
	var evicted *limitedConn
	defer func() {
		if evicted != nil {
			_ = evicted.Conn.Close()
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.served || lc.out {
		return lc.served
	}
	if l.serving >= l.lim.MaxConns {
		var since time.Time
		for ic, t := range l.idle {
			if evicted == nil || t.Before(since) {
				evicted, since = ic, t
			}
		}
		if evicted == nil {
			return false
		}
		l.countOut(evicted)
	}
	l.leavePending(lc)
	lc.served = true
	l.serving++
	return true
}

// oldest is the front of a waiting list, or nil.
func oldest(waiting *list.List) *limitedConn {
	if e := waiting.Front(); e != nil {
		return e.Value.(*limitedConn)
	}
	return nil
}

// countOut forgets c, once; l.mu is held.
func (l *ConnLimiter) countOut(c *limitedConn) {
	if c.out {
		return
	}
	c.out = true
	if c.served {
		l.serving--
		delete(l.idle, c)
		return
	}
	l.leavePending(c)
}

// leavePending takes pending c off the pending counts; l.mu is held.
func (l *ConnLimiter) leavePending(c *limitedConn) {
	l.pending--
	cl := l.clients[c.client]
	cl.pending--
	l.unwait(c, cl)
	if cl.pending == 0 {
		delete(l.clients, c.client)
	}
}

// unwait makes pending c no longer one to close; l.mu is held.
func (l *ConnLimiter) unwait(c *limitedConn, cl *client) {
	if c.inAll != nil {
		l.waiting.Remove(c.inAll)
		cl.waiting.Remove(c.inClient)
		c.inAll, c.inClient = nil, nil
	}
}

func (l *ConnLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case lc.out:
	case lc.served && s == http.StateIdle:
		l.idle[lc] = time.Now()
	case lc.served:
		delete(l.idle, lc)
	case s == http.StateActive:
		// Its headers are in (or broke): it is about to be answered or
		// closed, and closing it now would only cut its answer.
		l.unwait(lc, l.clients[lc.client])
	}
}

// clientOf is the address a pending connection counts against: the
// remote IP, or its /64 for IPv6 (one host's usual share).
func clientOf(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// limitedConn counts itself out when it is closed. Its fields after l
// are l.mu's.
type limitedConn struct {
	net.Conn
	l      *ConnLimiter
	client netip.Prefix

	served          bool          // holds a place
	out             bool          // counted out
	inAll, inClient *list.Element // in l.waiting and its client's: may be closed to make room
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.countOut(c)
	return err
}
