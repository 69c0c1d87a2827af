// Package replicas reads, from a Redis master's INFO replication, how
// many of its replicas a write must wait for: those whose state is
// online. A replica still in its full resynchronisation (wait_bgsave,
// send_bulk) is connected but cannot acknowledge until the resync ends,
// so waiting for it only times out; one that is online is waited for,
// since a failover may promote it.
//
// Not guaranteed: that a replica online now acknowledges in time; WAIT
// says how many did.
package replicas
