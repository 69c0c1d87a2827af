// Package leader turns a lease on a lock into leadership, one lane per
// lock (per partition): a Lane is the whole leadership of its lock (the
// chart's state, the lease and its renewal, the backoff, the step-down's
// hold, the deafness to notices, the guards' verdicts) in one value that
// one goroutine owns, the machine's (package machine). Its I/O runs in
// the machine's Calls and comes back as data the owner applies; other
// goroutines talk to it by message and read the immutable Snapshot it
// publishes after every change. A replica with one lock runs one lane;
// with partitions, one per partition; the code path is the same.
//
// Guarantees: the work's context is the one owner of the lease deadline
// (the job queue only checks Lease.Valid at its fenced writes). It is
// cancelled when the lease's local deadline (attempt start + TTL - drift,
// on the monotonic clock) passes, even if Redis never answers again, and
// when work is stopped; the lock is released only after the work has
// returned; a renew that fails with time left is retried with jitter,
// never past the deadline. A process that was paused past its deadline
// finds its work context already cancelled when it wakes (the deadline
// timer fires first) and its lease invalid. A lease won by an attempt
// whose state was left meanwhile is released at once, never left to
// expire.
//
// Every renewal goes through one Renewer per replica, which sends the
// requests that arrive together (the lanes' renew timers are armed to its
// ticks) in one redislock.Group call; each lane gets the answer of a call
// made for its own request, never a cached one.
//
// Work that ends by itself (returns, fails, panics, or outlives its
// deadline) ends its leadership: the snapshot stops saying it leads at
// once, and the lane stops the work, releases the lock and acquires
// afresh. A panic in the work is logged once with its stack and never
// reaches the process. The waits after such leaderships, when they come
// quickly one after another, and after consecutive acquire errors back
// off (BeginWait), so a replica that cannot work neither flaps nor
// hammers Redis. A guard (Config.MayLead: the partition count checked,
// no Redis that evicts keys) is asked before every acquire and as the
// work starts; one that refuses while the lane leads ends the work the
// same way (GuardsChanged). Every acquire passes the highest token this
// lane has observed (its own, the lock value of a holder that refused
// it, and what Observe is told: the registry, the history) as the floor
// the epoch is raised to before the token is minted, so a token is above
// all of them even after Redis lost the epoch; an epoch found below it is
// logged once at ERROR and counted (Observer.EpochRegression).
//
// A lane that does not lead can always say why (Snapshot.Reason: held by
// whom until when, not this replica's share, a guard's refusal, a
// fault, a hold); it logs each new reason once, at INFO where a
// contending lane waits on it: a follower says once who leads, and again
// only when that changes.
//
// StepDown(token) gives a leadership up on an operator's request, through
// the same path (the work ends with ErrSteppedDown, the lane stops it and
// releases the lock with its notice), and only for the leadership that
// holds that token, once. The lane then waits StepDownHold (default two
// retry intervals), deaf to release notices and avoiding its partition
// (Snapshot.Avoiding), so another replica takes over. Release tells
// BeforeRelease, before a still valid lease is given up, why its work
// ended (nil when stopped), so the leadership history can say how it
// ended.
//
// Not guaranteed: that the work notices cancellation at once. Anything the
// work writes must carry the fencing token (Lease.Token) and be checked by
// the store; that, not this package, is what makes a late leader harmless.
// The highest token observed is remembered in memory only: a replica
// started after the authority lost its data cannot tell.
package leader
