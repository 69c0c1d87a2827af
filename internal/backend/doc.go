// Package backend opens the Redis side of lockworker as the configuration
// describes it: for REDIS_MODE standalone one client per REDIS_URLS entry
// (a single node, or Redlock over several), for sentinel one go-redis
// failover client (and a sentinel client for +switch-master), for cluster
// one go-redis cluster client; the lock and, on the first node, the job
// queue, the fleet registry, the leadership history and the operator's
// actions, all under the LOCK_KEY's hash tag; and the notice sources. The
// daemon and every one-shot command (status, history, enqueue,
// deadletters, requeue, stepdown, pause, resume) open it the same way.
//
// Guaranteed: lock commands are never retried by the client (go-redis's
// own retries are off, and the cluster client follows no redirect, since
// its redirect loop also re-sends after timeouts; so a SET NX whose reply
// was lost is not re-sent and reported as taken), every call's context
// deadline bounds its socket reads, and no URL or password appears in an
// error.
//
// CheckPartitions holds every replica and command to the fleet's
// partition count: the one recorded on the first node and the one the
// live registry records carry; after a flush under a running fleet it
// waits for that fleet rather than record another count.
//
// Probe tells a refusal no retry can change (Permanent: credentials,
// permissions, database index, TLS) from a Redis that is merely not up yet.
// Reach, for the one-shot commands, which have no retry loop, also names
// each node that did not answer at all (an UnreachableError).
//
// Not guaranteed: that Redis is reachable; Open does not dial, the first
// command does. After a failover the first commands may fail (MOVED,
// READONLY, a closed connection) until the client has found the new
// master; callers retry, as they do for any Redis error.
package backend
