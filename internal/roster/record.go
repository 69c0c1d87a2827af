package roster

import (
	"slices"
	"time"
)

// Record is one replica as the registry shows it. It has no field for a
// URL, a password, a lock value or a token other than the fencing token.
type Record struct {
	WorkerID string `json:"workerId"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	Version  string `json:"version"`
	// State is the replica's machine state, e.g. working (the daemon
	// reports renew_lock as working and acquiring_lock as
	// waiting_to_acquire_lock: the loops' short states).
	State string `json:"state"`
	// Leader is true while the replica holds a valid lease and works.
	Leader bool `json:"leader"`
	// Token is the fencing token of its leadership; 0 when it does not lead.
	Token int64 `json:"token,omitempty"`
	// Since is when the replica entered State.
	Since time.Time `json:"since"`
	// JobsDone counts the jobs this process committed.
	JobsDone int64 `json:"jobsDone"`
	// LastError is the replica's current problem, if any (scrubbed of
	// secrets by whoever fills it in).
	LastError string `json:"lastError,omitempty"`
	// LastErrorClass is LastError's kind (jobs.ErrorClass), which quotes
	// no handler output: what readers without the admin token see.
	LastErrorClass string `json:"lastErrorClass,omitempty"`
	// UpdatedAt is when the record was written (the writer's clock).
	UpdatedAt time.Time `json:"updatedAt"`
	// Partitions are the partitions the replica leads, with their tokens,
	// in a fleet of more than one partition (PARTITIONS > 1).
	Partitions []Owned `json:"partitions,omitempty"`
	// Contending lists the partitions the replica waits for (acquiring or
	// waiting to acquire), in a fleet of more than one partition: an owner
	// hands a partition over only to a replica that waits for it.
	Contending []int `json:"contending,omitempty"`
	// PartitionCount is the fleet's partition count this replica runs
	// with (PARTITIONS): a replica started with another is refused.
	PartitionCount int `json:"partitionCount,omitempty"`
	// Avoiding lists the partitions the replica stepped down from on an
	// operator's request: for a while, the others take them.
	Avoiding []int `json:"avoiding,omitempty"`
}

// Owned is a partition a replica leads and the fencing token it leads it
// with.
type Owned struct {
	Partition int   `json:"partition"`
	Token     int64 `json:"token"`
}

// changed reports whether r differs from o in what a reader should see at
// once: who leads what, in which state, with which error, waiting for
// what.
func (r Record) changed(o Record) bool {
	return r.State != o.State || r.Leader != o.Leader || r.Token != o.Token || r.LastError != o.LastError ||
		!slices.Equal(r.Partitions, o.Partitions) || !slices.Equal(r.Contending, o.Contending) ||
		!slices.Equal(r.Avoiding, o.Avoiding)
}
