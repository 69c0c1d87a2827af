// Package replicas is the one path by which a write waits for the
// replicas of its master before it counts (an epoch bump, whose token a
// failover must not hand out again; an enqueue, which a failover must not
// lose): how many replicas a master has online (Online, read from INFO
// replication, cached per master for TTL by Counts), how many a write
// waits for (Want: all of them, and at least a minimum), the WAIT on the
// write's own connection (Wait), and its verdict (Acked).
//
// A replica still in its full resynchronisation (wait_bgsave, send_bulk)
// is connected but cannot acknowledge until the resync ends, so waiting
// for it only times out; one that is online is waited for, since a
// failover may promote it.
//
// Not guaranteed: that a replica online now acknowledges in time; WAIT
// says how many did. A count cached for up to TTL may miss a replica that
// came online since (the write then waits for fewer) or count one that
// left (the WAIT then falls short and the count is read again).
package replicas
