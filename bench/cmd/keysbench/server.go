package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// jobServer is the http handler's store: it answers each job after
// sleeping work, and checks that each key's jobs arrive in order (the
// payload carries the job's rank in its key). It can fail chosen jobs and
// go down (its port refusing connections) and come back on the same port.
type jobServer struct {
	work time.Duration
	addr string
	url  string

	mu        sync.Mutex
	srv       *http.Server
	fail      func(it item) int // the status to fail a job with, 0 for none; nil: none
	last      map[string]int
	seen      map[string][]int // ranks in arrival order, for keys in watch
	watch     map[string]bool
	instant   string // this key's jobs are answered at once
	requests  int
	served    time.Duration // the handler's own time, summed over requests
	reordered int
	repeated  int
}

func startJobServer(work time.Duration) (*jobServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &jobServer{work: work, addr: ln.Addr().String(), last: map[string]int{}, seen: map[string][]int{}, watch: map[string]bool{}}
	s.url = "http://" + s.addr + "/job"
	s.serve(ln)
	return s, nil
}

func (s *jobServer) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

func (s *jobServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var it item
	if err := json.Unmarshal(body, &it); err != nil {
		http.Error(w, "not a bench job", http.StatusBadRequest)
		return
	}
	start := time.Now()
	if k := s.instantKey(); k == "" || it.Key != k {
		time.Sleep(s.work)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.served += time.Since(start)
	if s.watch[it.Key] {
		s.seen[it.Key] = append(s.seen[it.Key], it.Rank)
	}
	if s.fail != nil {
		if code := s.fail(it); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	// Only a success counts for the order: a failed attempt is retried.
	if prev, ok := s.last[it.Key]; ok && it.Rank < prev {
		s.reordered++
	} else if ok && it.Rank == prev {
		s.repeated++
	}
	s.last[it.Key] = it.Rank
	w.WriteHeader(http.StatusNoContent)
}

// reset forgets the keys seen and the counts: a new run starts every key
// at rank 0.
func (s *jobServer) reset(fail func(item) int, watch ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.last)
	clear(s.seen)
	clear(s.watch)
	for _, k := range watch {
		s.watch[k] = true
	}
	s.fail = fail
	s.instant = ""
	s.requests, s.reordered, s.repeated, s.served = 0, 0, 0, 0
}

// setInstant makes key's jobs answered without the wait.
func (s *jobServer) setInstant(key string) {
	s.mu.Lock()
	s.instant = key
	s.mu.Unlock()
}

func (s *jobServer) instantKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.instant
}

// ranks is what arrived for a watched key, in order.
func (s *jobServer) ranks(key string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.seen[key]...)
}

// resetServed starts servedPerJob afresh, keeping the rest.
func (s *jobServer) resetServed() {
	s.mu.Lock()
	s.served, s.requests = 0, 0
	s.mu.Unlock()
}

// servedPerJob is the mean time the handler took per request, its asked
// wait included: on a busy machine a sleep overruns.
func (s *jobServer) servedPerJob() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requests == 0 {
		return 0
	}
	return s.served / time.Duration(s.requests)
}

func (s *jobServer) counts() (requests, reordered, repeated int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.reordered, s.repeated
}

// down closes the listener and every connection: the port refuses
// connections until up.
func (s *jobServer) down() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	return srv.Close()
}

// up listens on the same port again.
func (s *jobServer) up() error {
	var ln net.Listener
	var err error
	// The old listener's port can take a moment to be free again.
	for range 50 {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.Join(errors.New("job server: listen again"), err)
}

func (s *jobServer) Close() error { return s.down() }
