package main

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
)

// move is one partition changing hands, from a replica's JSON log: its
// chart reached working (acquired) or left it (released). Each line is
// stamped by the replica with the machine's wall clock, so it can be
// compared with the supervisor's own clock.
type move struct {
	at        time.Time
	replica   string
	partition int
	acquired  bool
}

// ownership collects the moves of every replica of a fleet, in arrival
// order.
type ownership struct {
	mu      sync.Mutex
	moves   []move
	changed chan struct{} // one pending wake-up at most; sends never block
}

func newOwnership() *ownership { return &ownership{changed: make(chan struct{}, 1)} }

// logLine is the part of a slog JSON line the benchmark reads.
type logLine struct {
	Time      time.Time `json:"time"`
	Msg       string    `json:"msg"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Partition *int      `json:"partition"`
}

// leading are the states of a leader: the lease is held, the work runs.
func leading(state string) bool { return state == "working" || state == "renew_lock" }

// parseMove reads one log line; ok is false for any line that moves no
// partition.
func parseMove(line []byte) (move, bool) {
	var l logLine
	if err := json.Unmarshal(line, &l); err != nil || l.Msg != "transition" || l.Partition == nil {
		return move{}, false
	}
	switch {
	case l.To == "working" && !leading(l.From):
		return move{at: l.Time, partition: *l.Partition, acquired: true}, true
	case leading(l.From) && !leading(l.To):
		return move{at: l.Time, partition: *l.Partition}, true
	}
	return move{}, false
}

func (o *ownership) add(m move) {
	o.mu.Lock()
	o.moves = append(o.moves, m)
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// mark is the index the next move will get.
func (o *ownership) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.moves)
}

// since returns the moves from index i on.
func (o *ownership) since(i int) []move {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]move(nil), o.moves[i:]...)
}

// await waits until done holds for the moves from index i on, or ctx ends.
func (o *ownership) await(ctx context.Context, i int, done func([]move) bool) ([]move, error) {
	for {
		if ms := o.since(i); done(ms) {
			return ms, nil
		}
		select {
		case <-o.changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writer returns the fleet output writer for the replica called name. It
// never blocks on a reader: a slow benchmark must not slow the child's
// logging, or it would shift the very timestamps it reads.
func (o *ownership) writer(name string) io.Writer {
	return &benchkit.LineWriter{Line: func(line []byte) {
		if m, ok := parseMove(line); ok {
			m.replica = name
			o.add(m)
		}
	}}
}
