// Package machine is lockworker's state chart: the xstate chart of
// "Distributed Locks in Node.js" ported to github.com/qmuntal/stateless,
// with the timers and concurrency rules stateless leaves to its user.
//
// It guarantees:
//   - one goroutine (Run) owns the stateless machine and is its only caller
//     of Fire; timers, callback results, Stop, release notices and the end
//     of the work reach it as events;
//   - every invoked callback (Acquire, Renew, StopWork, Release) runs in its
//     own goroutine under a context cancelled when its state is left, and
//     its result moves the machine only while that same state entry is
//     current: a stale result or a late timer is dropped;
//   - those callbacks never overlap: each starts only after the previous
//     one returned, so Release never races a late Acquire or StopWork;
//   - StartWork runs once per acquired lease, not on every renewal;
//   - work that ends by itself (WORK_ENDED, reported through the func
//     StartWork is given) gives its leadership up: cleanup stops it,
//     releasing_lock releases the lock, and the machine waits in
//     waiting_to_acquire_lock to acquire afresh; the end of an earlier
//     leadership's work never moves a later one;
//   - Stop (or cancelling Run's context) always ends in idle via cleanup
//     and releasing_lock, whose callbacks get a context that the caller's
//     cancellation does not reach;
//   - Run returns only after every goroutine it started has returned;
//   - the chart is declared once, as data (chart.go): it configures
//     stateless, and Describe and Graph read the same declaration, so no
//     picture of the chart can drift from the machine;
//   - every transition is logged once: a step of the two loops (a leader
//     renewing, a follower retrying; see Routine) at DEBUG, every other,
//     and an attempt that failed with a fault rather than a lock held
//     elsewhere (Config.Held), at INFO.
//
// It does not know Redis, leases, deadlines or fencing tokens: the callbacks
// do. Nothing here makes a late leader harmless; fencing does that. A
// callback that ignores its context delays the machine by as long as it
// blocks, so callbacks must bound their own work.
package machine
