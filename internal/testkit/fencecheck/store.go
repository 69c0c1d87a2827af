package fencecheck

import (
	"slices"
	"sync"
	"time"
)

// Write is one effect a job asks the store to apply.
type Write struct {
	// Worker names the replica whose job made the write.
	Worker string `json:"worker"`
	// Token is the fencing token the job ran under.
	Token int64 `json:"token"`
	// JobID is the queue's ID of the job.
	JobID string `json:"jobId"`
	// Seq is the job's position in enqueue order, from 0.
	Seq int `json:"seq"`
	// Attempt is the queue's delivery count, for people reading a history.
	Attempt int `json:"attempt,omitempty"`
	// Partition is the partition whose leadership Token belongs to
	// (LOCKWORKER_PARTITION); 0 without partitions. Tokens of different
	// partitions are unrelated, so the store fences each on its own.
	Partition int `json:"partition,omitempty"`
	// Key is the job's ordering key (LOCKWORKER_KEY), "" for none.
	Key string `json:"key,omitempty"`
	// Run names one run of the handler (one writer process): its Began,
	// and its Wrote or Failed, carry the same Run. "" for a write that
	// reports no run (its begin and end are then not judged).
	Run string `json:"run,omitempty"`
	// Schedule and ScheduledAt name the tick a schedule's job is for
	// (LOCKWORKER_SCHEDULE, LOCKWORKER_SCHEDULED_AT); such a job has no
	// Seq of the enqueuer's (Seq is -1).
	Schedule    string    `json:"schedule,omitempty"`
	ScheduledAt time.Time `json:"scheduledAt,omitzero"`
}

// Record is a write as the store saw it.
type Record struct {
	Write
	// Index is the write's position in the history, from 0.
	Index int `json:"index"`
	// At is when the store received it.
	At time.Time `json:"at"`
	// Accepted is false for a write rejected as stale.
	Accepted bool `json:"accepted"`
	// Highest is the highest accepted token of the write's partition
	// before this write.
	Highest int64 `json:"highest"`
}

// Config configures a Store.
type Config struct {
	// Unfenced makes the store accept every write, stale or not: the switch
	// that shows Check catches what fencing prevents. Default false.
	Unfenced bool
	// Now stamps records. Default time.Now.
	Now func() time.Time
}

// Store is a fenced store that records every write. It keeps a fence per
// partition (Write.Partition), as a store guarding a partitioned queue's
// effects would. It is safe for concurrent use.
type Store struct {
	cfg Config

	mu       sync.Mutex
	highest  map[int]int64 // by partition
	history  []Record
	events   []Event
	accepted int
}

// NewStore returns an empty store.
func NewStore(cfg Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{cfg: cfg, highest: map[int]int64{}}
}

// Write applies w unless fencing is on and w.Token is below the highest
// token accepted so far in w's partition (an equal token is the same
// leadership writing again). It records w either way and returns the
// record.
func (s *Store) Write(w Write) Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	high := s.highest[w.Partition]
	r := Record{Write: w, Index: len(s.history), At: s.cfg.Now(), Highest: high}
	r.Accepted = s.cfg.Unfenced || w.Token >= high
	if r.Accepted {
		s.highest[w.Partition] = max(high, w.Token)
		s.accepted++
	}
	s.history = append(s.history, r)
	s.note(Wrote, w, r.Accepted)
	return r
}

// Begin records that a run of w's job began (the writer's Begin).
func (s *Store) Begin(w Write) Event { return s.Note(Began, w) }

// Fail records that the run w names ended failing, without a write.
func (s *Store) Fail(w Write) Event { return s.Note(Failed, w) }

// Note records an event of kind k; for the operator's kinds (ParkSeen,
// Retried, Skipped) w names the job by JobID, Key and Partition.
func (s *Store) Note(k EventKind, w Write) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.note(k, w, false)
}

func (s *Store) note(k EventKind, w Write, accepted bool) Event {
	e := Event{Order: len(s.events), At: s.cfg.Now(), Kind: k, Write: w, Accepted: accepted}
	s.events = append(s.events, e)
	return e
}

// Events returns every event so far, in the order the store saw them:
// writes (as Wrote), begins, failures and the operator's decisions.
func (s *Store) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// History returns every write so far, in arrival order.
func (s *Store) History() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}

// Counts returns how many writes were accepted and rejected.
func (s *Store) Counts() (accepted, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, len(s.history) - s.accepted
}

// Last returns the last accepted write and whether there is one.
func (s *Store) Last() (Record, bool) { return s.last(func(Record) bool { return true }) }

// LastIn returns the last accepted write of partition p and whether there
// is one.
func (s *Store) LastIn(p int) (Record, bool) {
	return s.last(func(r Record) bool { return r.Partition == p })
}

func (s *Store) last(match func(Record) bool) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.history) - 1; i >= 0; i-- {
		if r := s.history[i]; r.Accepted && match(r) {
			return r, true
		}
	}
	return Record{}, false
}
