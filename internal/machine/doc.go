// Package machine is lockworker's state chart: the xstate chart of
// "Distributed Locks in Node.js" ported to github.com/qmuntal/stateless,
// with the timers and concurrency rules stateless leaves to its user. A
// Machine drives one Lane: the leadership of one lock (a partition's).
//
// It guarantees:
//   - one goroutine (Run) owns the stateless machine and the lane: it is
//     the only caller of Fire and of the Lane's methods, so a lane keeps
//     its state without a lock; timers, Call results, Stop and the lane's
//     messages (Post) reach it as events;
//   - one loop for every lane: the chart waits in idle until the lane
//     contends (Lane.Contends), and goes back to idle through cleanup and
//     releasing_lock when it no longer does;
//   - every Call (acquire, renew, stopWork, release) runs in its own
//     goroutine under a context cancelled when its state is left, and its
//     result moves the machine only while that same state entry is
//     current; a stale result is handed back to be discarded (a lease won
//     too late is released), and a late timer is dropped;
//   - Calls never overlap: each starts only after the previous one
//     returned and its result was applied or discarded, so a release
//     never races a late acquire or stopWork;
//   - StartWork runs once per acquired lease, not on every renewal;
//   - Stop (or cancelling Run's context) always ends in idle via cleanup
//     and releasing_lock, whose Calls get a context that the caller's
//     cancellation does not reach; from idle, Run returns at once;
//   - Run returns only after every goroutine it started has returned;
//   - the chart is declared once, as data (chart.go): it configures
//     stateless, and Describe and Graph read the same declaration, so no
//     picture of the chart can drift from the machine;
//   - every transition is logged once: a step of the two loops (a leader
//     renewing, a follower retrying; see Routine) at DEBUG, every other,
//     and an attempt that failed with a fault the lane does not call
//     routine (Lane.Routine), at INFO. "Trying to acquire lock" is at
//     INFO but for a follower's routine retry.
//
// It does not know Redis, leases, deadlines or fencing tokens: the lane
// does. Nothing here makes a late leader harmless; fencing does that. A
// Call that ignores its context delays the machine by as long as it
// blocks, so Calls must bound their own work.
package machine
