package dashboard

import (
	"context"
	"time"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/roster"
)

// Source gives the dashboard everything it shows. The daemon implements it
// over the fleet registry, the leadership stream, the queue and its own
// machine.
type Source interface {
	// Snapshot reads the whole picture once. Its error is logged and never
	// shown: the page only says the data source is unavailable.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Changes returns a channel that receives a value whenever the
	// snapshot may have changed; Run calls it once. Sends should not block
	// (a buffer of one that drops extra sends is enough: notices
	// coalesce). A nil channel means no notices: Run then pushes only
	// every Config.RefreshInterval. A closed channel is treated as nil.
	Changes() <-chan struct{}
}

// Snapshot is what the page shows, sent as JSON on /api/snapshot and on
// /events. It has no field for a Redis URL, a password, a lock value or the
// admin token, and every string in it passes through redaction before it
// is sent (see Config.Secrets). Errors go out in full only to requests
// that bear the admin token; anyone else gets their classes (public).
type Snapshot struct {
	// ReadAt is when the dashboard read the snapshot; set by the
	// dashboard, a Source leaves it zero.
	ReadAt time.Time `json:"readAt,omitzero"`
	// Self is the replica that serves this dashboard: the chart shows it.
	Self Self `json:"self"`
	// Epoch is the lock's current fencing epoch: the newest token issued.
	Epoch int64 `json:"epoch"`
	// Replicas lists the live replicas' registry records, the leader
	// among them.
	Replicas []roster.Record `json:"replicas"`
	Queue    Queue           `json:"queue"`
	// History lists leaderships, newest first.
	History []Leadership `json:"history"`
	// Partitions lists every partition, by number, with its owner and
	// token as the replicas' records say and its queue's figures, in a
	// fleet of more than one partition; none without partitions.
	Partitions []figures.Partition `json:"partitions,omitempty"`
	// Schedules lists the fleet's schedules, by name, with their last
	// and next ticks. figures.Schedule has no payload, only its size: a
	// payload may carry anything, and no view shows it.
	Schedules []figures.Schedule `json:"schedules"`
}

// Self is the serving replica's own machine.
type Self struct {
	WorkerID string `json:"workerId"`
	// State is the machine's current state, as machine.State's String.
	State string `json:"state"`
	// Transitions are the latest transitions, oldest first; the page marks
	// the last few on the chart.
	Transitions []Transition `json:"transitions"`
	// Lanes are the replica's lanes, one per partition: each one's state
	// and why it does not lead.
	Lanes []Lane `json:"lanes"`
}

// Lane is one lane of the serving replica (one partition's leadership).
type Lane struct {
	Partition int    `json:"partition"`
	State     string `json:"state"`
	Token     int64  `json:"token,omitempty"`
	// Reason says why the lane does not lead; empty while it leads.
	Reason string `json:"reason"`
}

// Transition is one move of the machine.
type Transition struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Trigger string    `json:"trigger"`
	At      time.Time `json:"at,omitzero"`
}

// Queue is the job queue's figures, and what only the page shows of it.
type Queue struct {
	figures.Queue
	// RatePerSec is committed jobs per second over the source's window.
	RatePerSec float64 `json:"ratePerSec"`
	// DeadLetters are the latest dead letters; Queue.DeadLettered counts
	// them all.
	DeadLetters []DeadLetter `json:"deadLetters"`
	// Parked are the parked keys, longest parked first (at most what the
	// source shows); Queue.Parked counts them all.
	Parked []ParkedKey `json:"parkedKeys"`
}

// ParkedKey is a key held after one of its jobs failed for good: that
// job and every later job of the key wait, in order, until an operator
// retries or skips it (POST /api/keys/retry, /api/keys/skip).
type ParkedKey struct {
	// Key is "" for keyless jobs: JobID names them.
	Key       string `json:"key"`
	Partition int    `json:"partition"`
	// Held counts the jobs it holds, the failing one included.
	Held     int64  `json:"held"`
	JobID    string `json:"jobId"`
	Attempts int    `json:"attempts"`
	// Class is the kind of failure (jobs.ErrorClass); Error the last
	// attempt's error in full, for the admin token's bearers only, as a
	// dead letter's.
	Class    string    `json:"class"`
	Error    string    `json:"error,omitempty"`
	ParkedAt time.Time `json:"parkedAt,omitzero"`
}

// DeadLetter is a job that failed every attempt. Its payload is left out:
// a payload may carry anything, secrets included.
type DeadLetter struct {
	ID string `json:"id"`
	// Class is the kind of failure (jobs.ErrorClass): all a reader
	// without the admin token sees of the error.
	Class string `json:"class"`
	// Error is the last attempt's error in full, which may quote the
	// handler's output (and so the payload): for the admin token's
	// bearers only (see Snapshot.public).
	Error    string    `json:"error,omitempty"`
	Attempts int       `json:"attempts"`
	FailedAt time.Time `json:"failedAt,omitzero"`
	// Token is the fencing token of the leader that dead-lettered it.
	Token int64 `json:"token,omitempty"`
}

// EndReason says how a leadership ended.
type EndReason string

// How a leadership ends.
const (
	EndReleased     EndReason = "released"      // released the lock (shutdown, handover)
	EndLeaseExpired EndReason = "lease_expired" // stopped renewing; the lease ran out
	EndSteppedDown  EndReason = "stepped_down"  // an operator asked it to step down
	EndFenced       EndReason = "fenced"        // a newer token rejected its writes
)

// Leadership is one entry of the leadership history.
type Leadership struct {
	Token    int64     `json:"token"`
	WorkerID string    `json:"workerId"`
	Started  time.Time `json:"started,omitzero"`
	// PreviousEnded is how the leadership before this one ended; empty
	// for the first one or when unknown.
	PreviousEnded EndReason `json:"previousEnded,omitempty"`
}

// public is s as anyone may read it: errors by their class only
// (DeadLetter.Class, ParkedKey.Class, roster.Record.LastErrorClass), since the errors
// themselves may quote what a handler wrote, and that may quote a job's
// payload. The slices are copies: s is not changed.
func (s Snapshot) public() Snapshot {
	s.Replicas = append([]roster.Record(nil), s.Replicas...)
	for i := range s.Replicas {
		s.Replicas[i].LastError = ""
	}
	s.Queue.DeadLetters = append([]DeadLetter(nil), s.Queue.DeadLetters...)
	for i := range s.Queue.DeadLetters {
		s.Queue.DeadLetters[i].Error = ""
	}
	s.Queue.Parked = append([]ParkedKey(nil), s.Queue.Parked...)
	for i := range s.Queue.Parked {
		s.Queue.Parked[i].Error = ""
	}
	return s.normalized()
}

// normalized returns s with nil slices made empty, so the page gets [] and
// never null.
func (s Snapshot) normalized() Snapshot {
	if s.Replicas == nil {
		s.Replicas = []roster.Record{}
	}
	if s.History == nil {
		s.History = []Leadership{}
	}
	if s.Self.Transitions == nil {
		s.Self.Transitions = []Transition{}
	}
	if s.Self.Lanes == nil {
		s.Self.Lanes = []Lane{}
	}
	if s.Queue.DeadLetters == nil {
		s.Queue.DeadLetters = []DeadLetter{}
	}
	if s.Queue.Parked == nil {
		s.Queue.Parked = []ParkedKey{}
	}
	if s.Schedules == nil {
		s.Schedules = []figures.Schedule{}
	}
	return s
}
