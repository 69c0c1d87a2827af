package main

import (
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
)

// delivery is one request of the daemon's http handler: one run of a job.
type delivery struct {
	at      time.Time // when the request reached the recorder: the job's start
	jobID   string
	key     string
	dueAt   string // Lockworker-Due-At as sent
	payload string
	token   string // Lockworker-Fencing-Token
	worker  string // Lockworker-Worker-Id
	attempt string // Lockworker-Attempt
}

// recorder is the jobs' handler: an HTTP server in the bench process that
// notes every request it receives, in arrival order, and answers 204 at
// once, so a job costs the daemon one request on a kept-alive connection.
type recorder struct {
	srv *http.Server
	url string

	mu   sync.Mutex
	runs []delivery
	news chan struct{} // a buffered nudge per request, for waiters
}

func startRecorder() (*recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &recorder{url: "http://" + ln.Addr().String() + "/job", news: make(chan struct{}, 1)}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *recorder) handle(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	d := delivery{at: at, jobID: req.Header.Get(jobs.HeaderJobID), key: req.Header.Get(jobs.HeaderKey),
		dueAt: req.Header.Get(jobs.HeaderDueAt), payload: string(body),
		token: req.Header.Get(jobs.HeaderFencingToken), worker: req.Header.Get(jobs.HeaderWorkerID), attempt: req.Header.Get(jobs.HeaderAttempt)}
	r.mu.Lock()
	r.runs = append(r.runs, d)
	r.mu.Unlock()
	select {
	case r.news <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// take returns the deliveries so far and forgets them.
func (r *recorder) take() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.runs
	r.runs = nil
	return out
}

// count is how many deliveries arrived since the last take.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// distinct is how many different values of of the deliveries since the
// last take have.
func (r *recorder) distinct(of func(delivery) string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := make([]string, len(r.runs))
	for i, d := range r.runs {
		vs[i] = of(d)
	}
	slices.Sort(vs)
	return len(slices.Compact(vs))
}

func jobIDOf(d delivery) string   { return d.jobID }
func payloadOf(d delivery) string { return d.payload }

func (r *recorder) Close() error { return r.srv.Close() }
