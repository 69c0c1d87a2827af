// Package jobs is a partition's job queue in Redis: anyone enqueues, only
// the partition's leader processes, and every outcome is a fenced write.
// Jobs are kept in groups: a key's jobs, or, without a key, the serial
// queue of a fleet with one partition (every keyless job) or a group of
// one job (a partitioned fleet). A group's jobs run one at a time in
// enqueue order; different groups run side by side, up to the slots the
// replica allows (Slots, JOB_CONCURRENCY).
//
// A Queue is what producers and operators use (Enqueue, Stats,
// DeadLetters, Requeue, Parked, Retry, Skip, Pause); it needs no handler
// and no leadership. An enqueue is acknowledged only once every replica
// of the queue's master that can acknowledge, and at least
// Config.MinReplicas, has it (WAIT on the write's own connection; one WAIT
// per bulk enqueue); otherwise it is written but fails with
// ErrNotReplicated. With MinReplicas above 0 no job runs before the same
// rule acknowledges the step that claimed it (its WAIT, in the step's
// round trip, covers the enqueue too): a job a failover may still discard
// has not run, so an enqueue that failed with ErrNotReplicated may be
// retried with the same idempotency key. On a full Redis (noeviction,
// maxmemory reached) it fails with ErrRedisFull and writes nothing. A Worker is the leader's
// side: Process runs a Handler on the jobs under the leadership's context
// and lease. A job that could not start because the host is out of
// resources (ErrHostFault) costs no attempt; if that persists, Process
// returns and the leadership goes to another replica.
//
// # Layout
//
// Config.Keys names every key; the layout (what each key holds, and the
// rule that a group's list is non-empty exactly when the group is ready,
// in flight or parked) is written once, in package keyspace's doc. The
// scripts' headers name the keys they take in its notation (J:ready, ...),
// and a test holds them and the code to it.
//
// The leader works in steps (step.lua), one round trip each: a step
// records how the runs the leader finished ended (jobs committed or
// dead-lettered, the group done, retried later, parked, interrupted),
// enqueues the schedules' ticks it was sent, moves the delayed jobs that
// are due into their groups, releases the claims of a lost leadership,
// and claims the next runs: up to one group per slot the worker holds,
// the groups that may run now, oldest first, and up to
// WorkerConfig.Batch jobs of each. Its reply names the schedules due,
// whose ticks the next step enqueues (computed in Go: package schedule),
// and when the next delayed job or tick falls due, so the leader wakes
// then without polling. The script
// compares the token with the fence first and changes nothing when the
// token is lower; otherwise it raises the fence to the token. It applies
// a run's outcome only while the group's claim is still that run's (this
// token, this first job), so a step sent again after a lost reply applies
// nothing twice.
//
// # Guaranteed
//
//   - Order per group: a group's jobs are handed to the handler one at a
//     time, in the group's order, which is enqueue order as Redis saw it
//     (a requeued dead letter goes to the head of its group by default).
//     Job n+1 of a group starts only after job n was committed, or
//     dead-lettered under FailureDeadLetter. A group never has two runs
//     at once, across leaders too: a new leader's first step releases the
//     lost leader's claims.
//   - A failure holds its group, and only it: a failed attempt makes its
//     group wait (Retry, or the answer's Retry-After) while other groups
//     run; a job that fails for good parks its group (FailurePark, the
//     default): it and every later job of the group are held, durable in
//     Redis, across leader changes, until Retry or Skip. Only
//     FailureDeadLetter moves a failed job out of its group's way.
//   - At-least-once: a job is finished only by a commit (or a dead
//     letter). A job in flight when its leader dies, is stopped, or loses
//     its lease is delivered again (with a higher Job.Attempt) by the
//     next leader; with group commit, so is every job of the lost run:
//     the ones finished but not recorded, and the ones never reached (at
//     most Batch jobs, or about BatchWindow of work). A stopped leader
//     (ctx done, lease still valid) records the jobs it finished and
//     gives back the rest. So is a job whose commit a Redis failover lost
//     (async replication): the claim the outcome names is gone, and the
//     group runs again from what Redis holds.
//   - Fencing (Kleppmann's rule): once a fenced script accepted a token (a
//     new leader's first step), a leader with a lower token cannot claim,
//     commit, retry, park or dead-letter anything, and its step leaves no
//     trace; Process then returns an error wrapping ErrStaleToken. So it
//     does when the handler's own store found the token stale (a handler
//     error wrapping ErrStaleToken: the HTTP handler's 409): the runs
//     finished are recorded and that job given back without counting a
//     delivery, when Redis's fence still admits the token. The third
//     leadership in a row whose token the store refuses on one job parks
//     that job's group, with an error that names lockworker epoch
//     --raise-to. Process also checks Lease.Valid before each job and
//     before each step (a lease found invalid is logged with its reason).
//     Jobs run under the context Process is given; its owner (package
//     leader) cancels it when the lease's deadline passes.
//   - Bounded attempts: deliveries are counted in Redis, so a job that
//     keeps killing or outliving its leaders fails for good after
//     MaxAttempts too; a lost run counts one delivery for each of its
//     jobs, started or not, and after it each is delivered alone, so a job
//     that kills its leaders fails alone. A handler error wrapping
//     ErrPermanent (the HTTP handler's 4xx other than 408, 409 and 429)
//     fails the job for good at once. A handler that panics fails that
//     attempt (the stack is logged once).
//   - Slots: a replica runs at most Slots.Size jobs at once over all its
//     partitions; a worker waiting for a slot waits in turn (first come,
//     first served), so no partition starves.
//   - Payloads and batches: Enqueue refuses an empty payload and one above
//     MaxPayload; EnqueueMany adds up to MaxBatch jobs in one script, all
//     or none, each group's in order; a batch with any bad item is
//     refused whole before anything is written.
//   - Pause: while the queue is paused, a step claims no group (checked
//     after the fence), so the leader keeps its lock and takes nothing
//     new; the runs in flight finish and are recorded. Delayed jobs still
//     join their keys and schedules still tick, as enqueues still add.
//   - Delayed jobs (Item.NotBefore): kept apart, durable, until their due
//     time by the leader's clock; a step at or after it moves each into
//     its group once (it is removed in the same script), at its place:
//     after the group's jobs placed before its due time, before those
//     enqueued after it while it waited (looking back at most 100 jobs
//     from the tail), never before the run in flight, a parked head or a
//     head backing off; jobs due at one time in ID order, that is in
//     enqueue order. A stale leader moves nothing. MaxDelay bounds how
//     far ahead.
//   - Schedules (Schedule): each tick is enqueued exactly once, by the
//     fenced leader of the schedule's partition: the tick's job, the
//     schedule's last tick and next tick are written in one step, only
//     while the next tick is still the one the leader read and only for
//     ticks later than the last; a resent step, a stale leader or a
//     leader change mid-tick neither loses nor doubles a tick. Missed
//     ticks are caught up once or skipped (schedule.CatchUp).
//   - Idempotent enqueue (Item.IdempotencyKey): per partition, checked in
//     the script that appends, so concurrent senders get one job and its
//     ID; the key has no expiry while its job is pending, delayed or
//     parked, and expires Config.IdempotencyTTL after the step (or skip)
//     that finished it.
//
// # Not guaranteed
//
//   - Order between groups: jobs of different keys run in any order, side
//     by side. With one partition every keyless job is in one group, so a
//     keyless job that keeps failing parks every keyless job behind it.
//   - Exactly-once side effects outside Redis. A handler can run twice for
//     one job (and, for a moment, a stale leader's handler can still be
//     running when the next leader starts it). Handlers make their effects
//     idempotent by Job.ID, or pass the fencing token to a store that
//     rejects tokens below the highest it has seen.
//   - Durability beyond Redis's own: the queue is as durable as the Redis
//     that holds it. Without AOF (appendfsync always) a Redis restart can
//     lose jobs, commits and the epoch itself; see docs/safety.md.
//   - Timeliness for an idle leader without notices: it is woken by
//     Worker.Notify (enqueue notices, an operator's retry, skip or
//     resume), by the next due retry, delayed job or schedule tick, and
//     otherwise looks for new jobs every PollInterval (jittered). A busy
//     leader takes the next run at once.
//   - A delayed job's due time or a tick's time by any clock but the
//     leader's: due times are compared with the clock of the replica that
//     leads the partition (and with the producer's, to decide whether a
//     job is delayed at all).
//   - Idempotency beyond a partition or past its window: an idempotency
//     key is unique in its partition (a keyed job's is its key's; reuse
//     a key with the same ordering key, or none), and once it expired the
//     same key enqueues a new job.
//   - An exact attempt count: a step retried after a Redis error may count
//     a redelivery twice.
//   - That the groups change only through this package: the scripts
//     assume the lists, sets and hashes are only theirs to write.
package jobs
