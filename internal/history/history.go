package history

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
)

// Reason says how a leadership ended.
type Reason string

// How a leadership ends.
const (
	Released     Reason = "released"      // released the lock: shutdown, or its work ended
	LeaseExpired Reason = "lease_expired" // never released: the lease ran out
	SteppedDown  Reason = "stepped_down"  // an operator asked it to step down
	Fenced       Reason = "fenced"        // a newer token rejected its writes
)

// Entry is one leadership.
type Entry struct {
	// ID is the entry's stream ID.
	ID string `json:"id"`
	// Partition is the partition led (0 in a fleet without partitions).
	Partition int       `json:"partition"`
	Token     int64     `json:"token"`
	WorkerID  string    `json:"workerId"`
	Started   time.Time `json:"started"`
	// PreviousEnded is how the leadership before this one ended; empty
	// for the first one recorded.
	PreviousEnded    Reason `json:"previousEnded,omitempty"`
	PreviousToken    int64  `json:"previousToken,omitempty"`
	PreviousWorkerID string `json:"previousWorkerId,omitempty"`
	// Handover is the time from the previous leader's end record to this
	// start, on the Redis server's clock; 0 when the previous one left no
	// record (lease_expired) or there was none.
	Handover time.Duration `json:"-"`
}

// Config configures a History.
type Config struct {
	// Client is the Redis that holds the history (the first node).
	// Required.
	Client redis.Cmdable
	// Keys names the history's keys (package keyspace). Required.
	Keys keyspace.Base
	// Partitions is the fleet's partition count (PARTITIONS): each
	// partition's leaderships follow one another. Default 1.
	Partitions int
	// MaxLen is about how many entries the stream keeps. Default 1000.
	MaxLen int64
}

// History reads and appends the leadership history. Safe for concurrent
// use.
type History struct {
	cfg    Config
	stream string
	skips  string   // K:skips
	last   []string // by partition: keyspace.Lease.HistoryEnded
}

var (
	//go:embed started.lua
	startedLua    string
	startedScript = redis.NewScript(startedLua)
	//go:embed ended.lua
	endedLua    string
	endedScript = redis.NewScript(endedLua)
)

// New validates cfg and returns a History.
func New(cfg Config) (*History, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("history: Client is required"))
	}
	if cfg.Keys.IsZero() {
		errs = append(errs, errors.New("history: Keys is required"))
	}
	if cfg.MaxLen < 0 {
		errs = append(errs, fmt.Errorf("history: MaxLen must not be negative, got %d", cfg.MaxLen))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.MaxLen == 0 {
		cfg.MaxLen = 1000
	}
	cfg.Partitions = max(cfg.Partitions, 1)
	h := &History{cfg: cfg, stream: cfg.Keys.History(), skips: cfg.Keys.Skips()}
	for n := range cfg.Partitions {
		h.last = append(h.last, cfg.Keys.Partition(n, cfg.Partitions).HistoryEnded())
	}
	return h, nil
}

// lease is partition p's hash key and the partition argument the scripts
// take ("" without partitions).
func (h *History) lease(p int) (string, string, error) {
	if p < 0 || p >= len(h.last) {
		return "", "", fmt.Errorf("history: no partition %d of %d", p, len(h.last))
	}
	if h.cfg.Partitions == 1 {
		return h.last[p], "", nil
	}
	return h.last[p], strconv.Itoa(p), nil
}

// Started appends the leadership of partition p (0 without partitions) by
// workerID with token and returns its entry; a re-sent call for the
// partition's newest token returns that entry's ID and adds nothing (dup
// true).
func (h *History) Started(ctx context.Context, p int, token int64, workerID string) (e Entry, dup bool, err error) {
	last, part, err := h.lease(p)
	if err != nil {
		return Entry{}, false, err
	}
	reply, err := startedScript.Run(ctx, h.cfg.Client, []string{h.stream, last}, token, workerID, h.cfg.MaxLen, part).Slice()
	if err != nil {
		return Entry{}, false, fmt.Errorf("history: started: %w", err)
	}
	if len(reply) != 2 && len(reply) != 5 {
		return Entry{}, false, fmt.Errorf("history: started: unexpected reply %v", reply)
	}
	s := func(i int) string { v, _ := reply[i].(string); return v }
	switch dup, _ := reply[0].(int64); {
	case len(reply) == 2 && dup == 1:
		return Entry{ID: s(1), Partition: p, Token: token, WorkerID: workerID}, true, nil
	case len(reply) != 5 || dup != 0:
		return Entry{}, false, fmt.Errorf("history: started: unexpected reply %v", reply)
	}
	e = Entry{ID: s(1), Partition: p, Token: token, WorkerID: workerID, Started: millis(s(2)), PreviousEnded: Reason(s(3))}
	if at := millis(s(4)); !at.IsZero() && !e.Started.Before(at) {
		e.Handover = e.Started.Sub(at)
	}
	return e, false, nil
}

// Ended records that the leadership of partition p with token ends for
// reason; call it just before the lock is released.
func (h *History) Ended(ctx context.Context, p int, token int64, workerID string, reason Reason) error {
	last, _, err := h.lease(p)
	if err != nil {
		return err
	}
	if err := endedScript.Run(ctx, h.cfg.Client, []string{last}, token, workerID, string(reason)).Err(); err != nil {
		return fmt.Errorf("history: ended: %w", err)
	}
	return nil
}

// List returns up to n entries, newest first; n <= 0 means all.
func (h *History) List(ctx context.Context, n int64) ([]Entry, error) {
	var msgs []redis.XMessage
	var err error
	if n > 0 {
		msgs, err = h.cfg.Client.XRevRangeN(ctx, h.stream, "+", "-", n).Result()
	} else {
		msgs, err = h.cfg.Client.XRevRange(ctx, h.stream, "+", "-").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("history: list: %w", err)
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, entryOf(m))
	}
	return out, nil
}

func entryOf(m redis.XMessage) Entry {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	n := func(k string) int64 { v, _ := strconv.ParseInt(s(k), 10, 64); return v }
	e := Entry{
		ID: m.ID, Partition: int(n("partition")), Token: n("token"), WorkerID: s("worker"), Started: millis(s("started")),
		PreviousEnded: Reason(s("previous_ended")), PreviousToken: n("previous_token"), PreviousWorkerID: s("previous_worker"),
	}
	if at := millis(s("previous_ended_at")); !at.IsZero() && !e.Started.Before(at) {
		e.Handover = e.Started.Sub(at)
	}
	return e
}

func millis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
