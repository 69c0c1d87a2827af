// Package roster is the fleet registry: each replica keeps a small record
// of itself in Redis (worker ID, host, pid, version, state, its token when
// it leads, since when, jobs done, last error) beside the lock, and anyone
// can list the live ones.
//
// Layout (keys named by package keyspace, on the first Redis node):
// K:replica:<worker> holds the record as JSON with a TTL of a few refresh
// periods, and the sorted set K:replicas indexes the worker IDs, scored by
// their records' expiry. A refresh is one round trip (SET PX, ZADD, and
// for the leader a ZREMRANGEBYSCORE that prunes the index); a record that
// changed also PUBLISHes on K:fleet, so pages and tools can re-read at
// once instead of polling. Listing is two round trips (ZRANGE, MGET).
//
// Guaranteed: a replica that stops cleanly removes its record (Reporter's
// Run does on its way out); one that dies drops out of List when its
// record's TTL runs out, whatever the clocks say, because Redis expires the
// key. A Reporter writes on its timer and, after a short settle, when the
// record changed, and never more often than that; Redis errors are logged
// and retried on the next tick, never returned.
//
// Not guaranteed: that a record is current. It is as old as its last write
// (at most one refresh period, plus the settle after a change). Records
// are for people and dashboards; leadership is decided by the lock alone,
// never by the registry. Nothing secret belongs in a record: the caller
// scrubs LastError.
package roster
