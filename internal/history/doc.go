// Package history is the leadership history: a capped Redis stream with
// one entry per leadership (its fencing token, its worker ID, when it
// started, and how the one before it ended), beside the lock on the first
// Redis node (keys named by package keyspace).
//
// How a leadership ended: a leader that gives the lock up on purpose
// records why just before it releases (Ended: released on a shutdown,
// stepped_down when an operator asked, fenced when a newer token rejected
// its writes). The next leader's Started reads that record in the same
// atomic script that appends its entry: when the record names the previous
// leadership's token, that is how it ended; when it does not, the previous
// leader never said goodbye (it crashed, froze or lost its link) and its
// lease ran out: lease_expired. Both times come from the Redis server's
// clock (TIME), so the handover between them is measured on one clock.
//
// Beside the leaderships, a second capped stream keeps the operators'
// skips of parked keys (Skipped, Skips): who skipped which key's job,
// when and why. The dead letter the skip made carries the same (jobs),
// but a requeue removes it; this record stays.
//
// Guaranteed: one entry per token (a re-sent Started adds none); the
// stream keeps about MaxLen entries (XADD MAXLEN ~). Started and Ended are
// single scripts.
//
// Not guaranteed: completeness. The history is for people: a leader whose
// Started failed (Redis unreachable at that moment) has no entry, and the
// next entry then names the leadership before it as its predecessor; an
// Ended that failed makes a clean release read as lease_expired. A skip
// is recorded after it is done, in a second write: a skip whose record
// failed is reported as such to whoever asked for it. Leadership
// itself never depends on it.
package history
