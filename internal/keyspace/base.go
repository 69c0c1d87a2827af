package keyspace

import "fmt"

// Base is the keyspace of one LOCK_KEY: its tagged key, the fleet-level
// names beside it, and its lease. The zero Base names nothing (IsZero).
type Base struct {
	key string // TaggedKey(LOCK_KEY)
}

// New is the keyspace of LOCK_KEY lockKey, which must be able to carry a
// hash tag (ValidLockKey).
func New(lockKey string) (Base, error) {
	if !ValidLockKey(lockKey) {
		return Base{}, fmt.Errorf("keyspace: LOCK_KEY %q cannot carry a hash tag: give it a non-empty {tag} of its own, or do not start it with '}'", lockKey)
	}
	return Base{key: TaggedKey(lockKey)}, nil
}

// MustNew is New for a key known to be valid (tests, benchmarks); it
// panics on an invalid one.
func MustNew(lockKey string) Base {
	b, err := New(lockKey)
	if err != nil {
		panic(err)
	}
	return b
}

// Key is the tagged LOCK_KEY: every name of this keyspace starts with it.
func (b Base) Key() string { return b.key }

// IsZero reports whether b is the zero Base, which names nothing.
func (b Base) IsZero() bool { return b.key == "" }

// Lease is the keyspace of the one lease of this LOCK_KEY: its lock is the
// tagged key itself.
func (b Base) Lease() Lease { return Lease{key: b.key} }

// Replicas is the index of the fleet registry: a sorted set of worker IDs
// scored by the expiry of their records (unix ms).
func (b Base) Replicas() string { return b.key + ":replicas" }

// Replica is the registry record of one replica.
func (b Base) Replica(workerID string) string { return b.key + ":replica:" + workerID }

// FleetChannel is the pub/sub channel on which a replica announces that
// its registry record changed.
func (b Base) FleetChannel() string { return b.key + ":fleet" }

// History is the capped stream of leaderships.
func (b Base) History() string { return b.key + ":history" }

// HistoryEnded is the hash that records how the last leadership that
// ended on purpose ended.
func (b Base) HistoryEnded() string { return b.key + ":history:ended" }

// StepDown holds the fencing token an operator asked to step down.
func (b Base) StepDown() string { return b.key + ":stepdown" }

// ControlChannel is the pub/sub channel on which an operator's change
// (step down, pause, resume) is announced.
func (b Base) ControlChannel() string { return b.key + ":control" }
