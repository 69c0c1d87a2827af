// Package replicas reads, from a Redis master's INFO replication, how
// many of its replicas can acknowledge a write now: those whose state is
// online. A replica still in its full resynchronisation (wait_bgsave,
// send_bulk) is connected, and ROLE lists it, but WAIT cannot count it
// until the resync ends, so waiting for it only times out.
//
// Not guaranteed: that a replica online now acknowledges in time; WAIT
// says how many did.
package replicas
