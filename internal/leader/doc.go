// Package leader turns a lease on a lock into leadership: it supplies the
// acquire, renew, release, startWork and stopWork callbacks that the state
// machine drives, and runs the leader's work under a context that ends the
// moment leadership may have ended.
//
// Guarantees: the work's context is the one owner of the lease deadline
// (the job queue only checks Lease.Valid at its fenced writes). It is
// cancelled when the lease's local deadline (attempt start + TTL - drift, on the monotonic clock) passes, even
// if Redis never answers again, and when work is stopped; the lock is
// released only after the work has returned; a renew that fails with time
// left is retried with jitter, never past the deadline. A process that was
// paused past its deadline finds its work context already cancelled when it
// wakes (the deadline timer fires first) and its lease invalid.
//
// Work that ends by itself (returns, fails, panics, or outlives its
// deadline) ends its leadership: Status stops reporting it at once, and the
// machine is told (the ended func of StartWork) so it stops the work,
// releases the lock and acquires afresh. A panic in the work is logged once
// with its stack and never reaches the process. The waits after such
// leaderships, when they come quickly one after another, and after
// consecutive acquire errors back off (RetryDelay), so a replica that
// cannot work neither flaps nor hammers Redis. Every acquire passes the
// highest token this replica has observed (its own, the lock value of a
// holder that refused it, and what Observe is told: the registry, the
// history) as the floor the epoch is raised to before the token is
// minted, so a token is above all of them even after Redis lost the
// epoch; an epoch found below it is logged once at ERROR and counted
// (Observer.EpochRegression).
//
// StepDown(token) gives a leadership up on an operator's request, through
// the same path (the work ends with ErrSteppedDown, the machine stops it and
// releases the lock with its notice), and only for the leadership that
// holds that token, once. The replica then waits StepDownHold (default two
// retry intervals), deaf to release notices, so another replica takes
// over. Release tells BeforeRelease, before a still valid lease is given
// up, why its work ended (nil for a shutdown), so the leadership history
// can say how it ended. LastError keeps the latest error met, for the
// fleet registry.
//
// Not guaranteed: that the work notices cancellation at once. Anything the
// work writes must carry the fencing token (Lease.Token) and be checked by
// the store; that, not this package, is what makes a late leader harmless.
// The highest token observed is remembered in memory only: a replica
// started after the authority lost its data cannot tell.
package leader
