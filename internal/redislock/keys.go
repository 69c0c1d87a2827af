package redislock

import "strings"

// The key scheme of one LOCK_KEY, decided here and nowhere else. Every key
// and channel is Key(lock, name) for the tagged lock key (TaggedKey), so
// they all hash to one Redis Cluster slot and every multi-key script runs
// under Cluster. To add a key (a registry, a history stream, a high-water
// mark), give it a name here and build it with Key.
//
//	K              the lock: "<secret>:<token>:<worker>", PX TTL; the secret
//	               is random (>= 128 bits), token and worker are for people
//	K:holder       hash {worker, token} of versions before the token moved
//	               into K's value; no longer written
//	K:epoch        the fencing counter, a plain integer: the last token minted
//	K:epoch:last   "<sha1 of a lock value>:<token>" of the last tagged bump
//	K:epoch:fence  with Redlock, the lowest token the job store accepts: the
//	               highest token a fenced write carried or a won quorum's bump
//	               minted, or the epoch an operator raised (one node: K:epoch)
//	K:released     pub/sub channel; a release publishes the worker ID on it
//	K:jobs:...     the job queue's keys and channel (JobsPrefix; package jobs)
//
// Beside the lock, on the first node only (where the epoch and the queue
// live), the fleet's shared view; these belong to other packages but are
// named here, so every key of K is built in one place:
//
//	K:replicas           sorted set: worker ID -> its record's expiry (unix ms)
//	K:replica:<worker>   one replica's record (JSON), PX a few refresh periods
//	K:fleet              pub/sub channel: a record changed (who, in which state)
//	K:history            capped stream of leaderships (token, worker, start, how
//	                     the previous one ended)
//	K:history:ended      hash: how the last leadership that ended on purpose
//	                     ended (token, worker, reason, at)
//	K:stepdown           the token an operator asked to step down, PX
//	K:control            pub/sub channel: an operator changed something
//	                     (step down, pause, resume); listeners re-read it
//
// The lock's keys live on every node, except the epoch keys, which live on
// the epoch authority only (beside the job queue).

// TaggedKey is the lock key for LOCK_KEY k: k itself when it already
// carries a Redis hash tag (a non-empty "{...}"), else "{k}". Keys built
// from it with Key share its hash slot. ValidLockKey says whether k can be
// tagged.
func TaggedKey(k string) string {
	if HashTag(k) != "" {
		return k
	}
	return "{" + k + "}"
}

// ValidLockKey reports whether TaggedKey(k) carries a hash tag: k is not
// empty and, when it has no tag of its own, does not start with '}' (which
// would make "{k}" start with the empty tag "{}").
func ValidLockKey(k string) bool { return k != "" && HashTag(TaggedKey(k)) != "" }

// HashTag is the part of key that Redis Cluster hashes when it is not the
// whole key: the text between the first '{' and the first '}' after it,
// when that text is not empty. "" means the whole key is hashed.
func HashTag(key string) string {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return ""
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return ""
	}
	return key[s+1 : s+1+e]
}

// Key is the key or channel called name that belongs to lock key lock
// (already tagged): lock + ":" + name, in the lock's hash slot.
func Key(lock, name string) string { return lock + ":" + name }

// EpochKey is the fencing counter of lock key K: a plain integer that only
// grows, bumped once per leadership on the epoch authority.
func EpochKey(key string) string { return Key(key, "epoch") }

// FenceKey is the job store's fence of lock key K under Redlock: the
// highest fencing token a fenced write has carried (or a bump after a won
// quorum, or an operator's raise). The store rejects a token below it
// (Kleppmann's rule), so a token minted for an attempt that then failed
// fences no one until a leader with a higher token writes. With one node
// the fence is the epoch; (*Locker).FenceKey says which.
func FenceKey(key string) string { return Key(EpochKey(key), "fence") }

// epochTagKey records which lock value got the last epoch bump, so a re-sent
// bump returns the same token instead of bumping twice.
func epochTagKey(key string) string { return Key(key, "epoch:last") }

// HolderKey is the hash {worker, token} that older versions kept beside
// lock key K to say who held it; the worker and token now live in K's
// value. Still named for the migration of older keys.
func HolderKey(key string) string { return Key(key, "holder") }

// ReleasedChannel is the pub/sub channel on which a release of K publishes
// the releasing worker ID.
func ReleasedChannel(key string) string { return Key(key, "released") }

// JobsPrefix is the prefix of the job queue that belongs to lock key K
// (package jobs' Config.Prefix): every queue key and its channel start
// with it, so they share K's hash slot.
func JobsPrefix(key string) string { return Key(key, "jobs") }

// ReplicasKey is the index of the fleet registry of lock key K: a sorted
// set of worker IDs scored by the expiry of their records (unix ms).
func ReplicasKey(key string) string { return Key(key, "replicas") }

// ReplicaKey is the registry record of one replica of lock key K.
func ReplicaKey(key, workerID string) string { return Key(key, "replica:"+workerID) }

// FleetChannel is the pub/sub channel on which a replica announces that
// its registry record changed.
func FleetChannel(key string) string { return Key(key, "fleet") }

// HistoryKey is the capped stream of leaderships of lock key K.
func HistoryKey(key string) string { return Key(key, "history") }

// LastEndKey is the hash that records how the last leadership of lock key K
// that ended on purpose ended.
func LastEndKey(key string) string { return Key(key, "history:ended") }

// StepDownKey holds the fencing token an operator asked to step down.
func StepDownKey(key string) string { return Key(key, "stepdown") }

// ControlChannel is the pub/sub channel on which an operator's change
// (step down, pause, resume) is announced.
func ControlChannel(key string) string { return Key(key, "control") }
