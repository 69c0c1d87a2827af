package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// Begin is what a writer reports before it writes: the write it is about to
// make and its process ID, so a test can stop it mid-write.
type Begin struct {
	fencecheck.Write
	PID int `json:"pid"`
}

// Coordinator serves the fenced store to the writers (POST /write),
// records their begins (POST /begin) and failures (POST /fail) in its
// log, tells a run to fail when its job is planned to (FailFirst,
// Poison), and holds a writer at POST /begin when a Trap asks for it.
type Coordinator struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup

	mu    sync.Mutex
	store *fencecheck.Store
	write http.Handler
	trap  *Trap
	begun int
	// The failure plan, by the job's seq: runs still to fail, and
	// poisoned jobs (every run fails until cured). seqOf maps the job IDs
	// begun so far to their seq. They outlive Reset.
	failFirst map[int]int
	poisoned  map[int]bool
	seqOf     map[string]int
}

// Trap catches the next /begin of one worker and holds its reply until
// Release.
type Trap struct {
	worker  string
	caught  chan Begin
	release chan struct{}
	once    sync.Once
}

// Caught delivers the held writer's Begin.
func (t *Trap) Caught() <-chan Begin { return t.caught }

// Release lets the held writer (if any) go on. Safe to call twice.
func (t *Trap) Release() { t.once.Do(func() { close(t.release) }) }

// NewCoordinator serves a new store on a free loopback port.
func NewCoordinator(cfg fencecheck.Config) (*Coordinator, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &Coordinator{ln: ln, failFirst: map[int]int{}, poisoned: map[int]bool{}, seqOf: map[string]int{}}
	c.Reset(cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /begin", c.begin)
	mux.HandleFunc("POST /fail", c.fail)
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		h := c.write
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	c.wg.Go(func() { _ = c.srv.Serve(ln) })
	return c, nil
}

// URL is the base URL writers post to.
func (c *Coordinator) URL() string { return "http://" + c.ln.Addr().String() }

// Store is the current store.
func (c *Coordinator) Store() *fencecheck.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store
}

// Begun counts /begin calls since the last Reset.
func (c *Coordinator) Begun() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.begun
}

// Reset starts a new, empty store; writes in flight may land in either.
func (c *Coordinator) Reset(cfg fencecheck.Config) {
	s := fencecheck.NewStore(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store, c.write, c.begun = s, fencecheck.Handler(s), 0
}

// Arm sets a trap for worker's next /begin, replacing any armed one (which
// is released).
func (c *Coordinator) Arm(worker string) *Trap {
	t := &Trap{worker: worker, caught: make(chan Begin, 1), release: make(chan struct{})}
	c.mu.Lock()
	old := c.trap
	c.trap = t
	c.mu.Unlock()
	if old != nil {
		old.Release()
	}
	return t
}

// Disarm removes t if it is still armed and releases it.
func (c *Coordinator) Disarm(t *Trap) {
	c.mu.Lock()
	if c.trap == t {
		c.trap = nil
	}
	c.mu.Unlock()
	t.Release()
}

// FailFirst makes the first n runs of job seq fail: a key failing for a
// while, then succeeding.
func (c *Coordinator) FailFirst(seq, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failFirst[seq] = n
}

// Poison makes every run of job seq fail until Cure: its key parks.
func (c *Coordinator) Poison(seq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.poisoned[seq] = true
}

// Poisoned reports whether the job with ID id (seen begun) is poisoned.
func (c *Coordinator) Poisoned(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, ok := c.seqOf[id]
	return ok && c.poisoned[seq]
}

// Cure lets the job with ID id succeed from its next run on.
func (c *Coordinator) Cure(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq, ok := c.seqOf[id]; ok {
		delete(c.poisoned, seq)
		delete(c.failFirst, seq)
	}
}

// CureAll lets every job succeed from its next run on.
func (c *Coordinator) CureAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.poisoned)
	clear(c.failFirst)
}

// failNow says whether this run of b's job must fail, and counts it.
func (c *Coordinator) failNow(b Begin) bool {
	if b.Schedule != "" {
		return false
	}
	c.seqOf[b.JobID] = b.Seq
	if c.poisoned[b.Seq] {
		return true
	}
	if c.failFirst[b.Seq] > 0 {
		c.failFirst[b.Seq]--
		return true
	}
	return false
}

func (c *Coordinator) fail(w http.ResponseWriter, r *http.Request) {
	var in fencecheck.Write
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.Store().Fail(in)
	w.WriteHeader(http.StatusNoContent)
}

func (c *Coordinator) begin(w http.ResponseWriter, r *http.Request) {
	var b Begin
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.store.Begin(b.Write)
	rep := BeginReply{Fail: c.failNow(b)}
	c.begun++
	t := c.trap
	if t != nil && t.worker == b.Worker {
		c.trap = nil
	} else {
		t = nil
	}
	c.mu.Unlock()
	if t != nil {
		t.caught <- b
		select {
		case <-t.release:
		case <-r.Context().Done():
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

// Close releases any held writer and stops the server, waiting for its
// handlers.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	t := c.trap
	c.trap = nil
	c.mu.Unlock()
	if t != nil {
		t.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = c.srv.Close()
	}
	c.wg.Wait()
	return err
}
