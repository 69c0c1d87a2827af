package httpapi

import (
	"context"
	"net"
	"net/http"
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

// ProbeConns is how many connections ConnLimiter admits past MaxConns, for
// /healthz and /readyz only.
const ProbeConns = 8

// ConnLimiter bounds a server's open connections to MaxConns, idle
// keep-alives included, so a crowd of clients cannot take the descriptors
// the replica's jobs need. At the cap a new connection closes the
// longest-idle keep-alive connection (closing an idle connection is
// always allowed in HTTP/1.1: clients retry); when none is idle it is
// admitted as one of ProbeConns spare connections, which serve the
// probes and answer anything else 503 with Retry-After; past those it is
// closed at once. It does not bound what one connection costs: the
// server's timeouts and the body bound do.
type ConnLimiter struct {
	max int

	mu    sync.Mutex
	open  int
	spare int
	idle  map[net.Conn]time.Time // the idle keep-alive connections, since when
}

// NewConnLimiter returns a limiter for maxConns connections (at least 1).
func NewConnLimiter(maxConns int) *ConnLimiter {
	return &ConnLimiter{max: max(1, maxConns), idle: map[net.Conn]time.Time{}}
}

// Open is how many connections are open now, spare ones included.
func (l *ConnLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Configure sets srv's timeouts and the hooks the limiter needs; ln must
// be the listener from Listener.
func (l *ConnLimiter) Configure(srv *http.Server) {
	srv.ReadHeaderTimeout = ReadHeaderTimeout
	srv.ReadTimeout = ReadTimeout
	srv.WriteTimeout = WriteTimeout
	srv.IdleTimeout = IdleTimeout
	srv.ConnState = l.connState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if lc, ok := c.(*limitedConn); ok && lc.spare {
			return context.WithValue(ctx, spareKey{}, true)
		}
		return ctx
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(spareKey{}) == nil {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close") // give the spare back at once
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many connections"})
	})
}

type spareKey struct{}

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

// admit counts c in, evicting the longest-idle connection at the cap,
// or returns nil when c must be closed.
func (l *ConnLimiter) admit(c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, l: l}
	var evicted *limitedConn
	defer func() {
		if evicted != nil {
			_ = evicted.Conn.Close() // counted out already; its server goroutine ends on the error
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open-l.spare >= l.max {
		var since time.Time
		for ic, t := range l.idle {
			if evicted == nil || t.Before(since) {
				evicted, since = ic.(*limitedConn), t
			}
		}
		if evicted != nil {
			l.countOut(evicted)
		}
	}
	switch {
	case l.open-l.spare < l.max:
	case l.spare < ProbeConns:
		lc.spare = true
		l.spare++
	default:
		return nil
	}
	l.open++
	return lc
}

// countOut forgets c, once; l.mu is held.
func (l *ConnLimiter) countOut(c *limitedConn) {
	if c.out {
		return
	}
	c.out = true
	l.open--
	if c.spare {
		l.spare--
	}
	delete(l.idle, c)
}

func (l *ConnLimiter) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc, ok := c.(*limitedConn); ok && s == http.StateIdle && !lc.spare {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
}

// limitedConn counts itself out when it is closed.
type limitedConn struct {
	net.Conn
	l     *ConnLimiter
	spare bool
	out   bool // counted out (l.mu)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.countOut(c)
	return err
}
