// Package notice turns Redis pub/sub messages into wake-up calls: release
// notices that let a follower try for the lock at once, and enqueue notices
// that let an idle leader take a new job at once.
//
// Guaranteed: each message on a watched channel calls that channel's
// handler, and so does every re-subscription after a broken connection
// (go-redis re-subscribes by itself and drops what was published during
// the gap) or after the server ended the subscription (Redis Cluster does
// for sharded channels when a failover moves their slot; Watch subscribes
// again), so a listener re-reads the state it cares about rather than
// trust that it missed nothing. Watch returns only after its subscription
// is closed. Classic pub/sub (Subscribe) and Redis Cluster's sharded
// pub/sub (SSubscribe) are both supported through Subscribe.
//
// Not guaranteed: delivery. A notice is a hint for speed, never proof of
// anything; callers keep polling as the fallback and check the real state
// (acquire the lock, claim the job) after every notice.
package notice
