// Package leader turns a lease on a lock into leadership: it supplies the
// acquire, renew, release, startWork and stopWork callbacks that the state
// machine drives, and runs the leader's work under a context that ends the
// moment leadership may have ended.
//
// Guarantees: the work's context is cancelled when the lease's local
// deadline (attempt start + TTL - drift, on the monotonic clock) passes, even
// if Redis never answers again, and when work is stopped; the lock is
// released only after the work has returned; a renew that fails with time
// left is retried with jitter, never past the deadline. A process that was
// paused past its deadline finds its work context already cancelled when it
// wakes (the deadline timer fires first) and its lease invalid.
//
// Not guaranteed: that the work notices cancellation at once. Anything the
// work writes must carry the fencing token (Lease.Token) and be checked by
// the store; that, not this package, is what makes a late leader harmless.
package leader
