// Package replicas reads, from a Redis master's INFO replication, how
// many of its replicas can acknowledge a write now: those whose state is
// online and that have acknowledged the stream (an offset above 0, or a
// master that wrote nothing yet). A replica still in its full
// resynchronisation (wait_bgsave, send_bulk, or online but still loading
// what it was sent, offset 0) is connected, but WAIT cannot count it
// until it acknowledges, so waiting for it only times out.
//
// Not guaranteed: that a replica online now acknowledges in time; WAIT
// says how many did.
package replicas
