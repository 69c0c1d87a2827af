package redislock

// The keys and channel that belong to lock key K. All of them live on every
// node, except the epoch keys, which live on the epoch authority only.
//
//	K              the lock: a random value (>= 128 bits), PX TTL
//	K:holder       hash {worker, token}, same TTL as K: who holds it, for people
//	K:epoch        the fencing counter, a plain integer (GET it to fence)
//	K:epoch:last   sha1 of the lock value that got the last epoch bump
//	K:released     pub/sub channel; a release publishes the worker ID on it

// EpochKey is the fencing counter of lock key K: a plain integer that only
// grows, bumped once per leadership on the epoch authority.
func EpochKey(key string) string { return key + ":epoch" }

// epochTagKey records which lock value got the last epoch bump, so a re-sent
// bump returns the same token instead of bumping twice.
func epochTagKey(key string) string { return key + ":epoch:last" }

// HolderKey is the hash {worker, token} that says who holds lock key K,
// with the same TTL as K and without the lock value.
func HolderKey(key string) string { return key + ":holder" }

// ReleasedChannel is the pub/sub channel on which a release of K publishes
// the releasing worker ID.
func ReleasedChannel(key string) string { return key + ":released" }
