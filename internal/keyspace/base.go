package keyspace

import (
	"fmt"
	"strconv"
	"strings"
)

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
func (b Base) Lease() Lease { return Lease{key: b.key, base: b.key} }

// Partition is the lease of partition n of a LOCK_KEY split into of
// partitions (PARTITIONS), 0 <= n < of. With one partition it is Lease,
// every name as it is without partitions. With more, each partition's
// names carry a hash tag of their own, the Base's tag with ":p<n>" added
// ("{lockworker:leader}" -> "{lockworker:leader:p3}"), so Redis Cluster
// spreads the partitions over its masters; HistoryEnded stays under the
// Base's tag, beside the history.
func (b Base) Partition(n, of int) Lease {
	if of <= 1 {
		return b.Lease()
	}
	tag := HashTag(b.key)
	end := strings.Index(b.key, "{"+tag+"}") + 1 + len(tag) // the tag's '}'
	part := ":p" + strconv.Itoa(n)
	return Lease{key: b.key[:end] + part + b.key[end:], base: b.key, part: part}
}

// Partitions records the fleet's partition count (PARTITIONS), set by the
// first replica: a replica or command configured with another count is
// refused.
func (b Base) Partitions() string { return b.key + ":partitions" }

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

// Skips is the capped stream of operators' skips of parked keys: who
// skipped which key's job, when and why (lockworker history shows them).
func (b Base) Skips() string { return b.key + ":skips" }

// ControlChannel is the pub/sub channel on which an operator's change
// (step down, pause, resume) is announced.
func (b Base) ControlChannel() string { return b.key + ":control" }
