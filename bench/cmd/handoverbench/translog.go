package main

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

// transition is one "transition" line of a replica's JSON log: the daemon
// logs every state change exactly once, stamped with the wall clock.
type transition struct {
	replica string    // the fleet name of the process that wrote it
	at      time.Time // the line's "time"
	from    string
	to      string
	trigger string
}

// logLine is the part of a slog JSON line the benchmark reads.
type logLine struct {
	Time    time.Time `json:"time"`
	Msg     string    `json:"msg"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Trigger string    `json:"trigger"`
}

// parseTransition reads one log line; ok is false for any other line.
func parseTransition(line []byte) (t transition, ok bool) {
	var l logLine
	if err := json.Unmarshal(line, &l); err != nil || l.Msg != "transition" || l.To == "" {
		return transition{}, false
	}
	return transition{at: l.Time, from: l.From, to: l.To, trigger: l.Trigger}, true
}

// recorder collects the transitions of every replica, in arrival order.
type recorder struct {
	mu      sync.Mutex
	log     []transition
	changed chan struct{} // one pending wake-up at most; sends never block
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}, 1)}
}

// writer returns the fleet output writer for the replica called name. It
// never blocks on the reader: a slow benchmark must not slow the child's
// logging, or it would shift the very timestamps it reads.
func (r *recorder) writer(name string) io.Writer {
	return &benchkit.LineWriter{Line: func(line []byte) {
		if t, ok := parseTransition(line); ok {
			t.replica = name
			r.add(t)
		}
	}}
}

func (r *recorder) add(t transition) {
	r.mu.Lock()
	r.log = append(r.log, t)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// mark is the index the next transition will get.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// since returns the transitions from index i on.
func (r *recorder) since(i int) []transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transition(nil), r.log[i:]...)
}

// await returns the first transition from index i on that matches, and its
// index, waiting for it until ctx ends.
func (r *recorder) await(ctx context.Context, i int, match func(transition) bool) (transition, int, error) {
	for {
		r.mu.Lock()
		for ; i < len(r.log); i++ {
			if match(r.log[i]) {
				t := r.log[i]
				r.mu.Unlock()
				return t, i, nil
			}
		}
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-ctx.Done():
			return transition{}, 0, ctx.Err()
		}
	}
}

// lastBefore returns the last transition before index i that matches.
func (r *recorder) lastBefore(i int, match func(transition) bool) (transition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i--; i >= 0; i-- {
		if match(r.log[i]) {
			return r.log[i], true
		}
	}
	return transition{}, false
}
