// Package operator carries out what an operator asks of the whole fleet,
// the same way from the command line and over HTTP: step the leader down,
// pause or resume the queue, requeue a dead letter, retry or skip a
// parked key. None of it needs the
// leader's HTTP port: requests go through Redis, beside the lock (keys and
// channel named by package keyspace, on the first node).
//
// Step down: StepDown reads who holds the lock, writes that leadership's
// fencing token to K:stepdown (with a TTL) and announces it on K:control.
// Every replica listens; only the one that leads with that very token acts
// (package leader's StepDown), so a request can never reach a later
// leader, and asking twice does nothing more. StepDown then waits for
// another holder, announcing again now and then in case a notice was lost.
//
// Skip: the key's failing job goes to the dead letters (jobs.Queue.Skip,
// one script), then the skip is recorded in the history's skips
// (history.Skipped: who, when, why), a second write: Skip says when that
// one failed (ErrNotRecorded) and the dead letter still names who and why.
//
// Guaranteed: each action is idempotent (a second retry or skip of a key
// no longer parked is refused: jobs.ErrNotParked); every change is announced on
// K:control so listeners (the dashboard) re-read at once.
//
// Not guaranteed: that a step-down lands when no replica listens (StepDown
// says so), nor which replica takes over; and a pause does not interrupt
// the job in flight (see package jobs).
package operator
