// Package jobs is the serial job queue in Redis: anyone enqueues, only the
// leader processes, one job at a time, in enqueue order, and every outcome
// is a fenced commit, one round trip per job or, with group commit, per
// batch of jobs.
//
// A Queue is what producers and operators use (Enqueue, Stats,
// DeadLetters, Requeue); it needs no handler and no leadership. An
// enqueue is acknowledged only once every replica of the queue's master
// that can acknowledge, and at least Config.MinReplicas, has it (WAIT on
// the write's own connection; one WAIT per bulk enqueue); otherwise it is
// written but fails with ErrNotReplicated. On a full Redis (noeviction,
// maxmemory reached) it fails with ErrRedisFull and writes nothing. A Worker is
// the leader's side: Process runs a Handler on each job under the
// leadership's context and lease. A job that could not start because the
// host is out of resources (ErrHostFault) costs no attempt; if that
// persists, Process returns and the leadership goes to another replica.
//
// # Layout
//
// Config.Keys names every key (package keyspace). For the lease's lock key
// K, P below is K:jobs and E is K:epoch:
//
//	P:stream        stream of pending jobs (XADD *, so IDs grow monotonically);
//	                fields id (ULID), payload (raw bytes), enqueued_at (unix ms)
//	P:position      stream ID of the last finished (committed or dead-lettered) entry
//	P:attempts      hash job ID -> deliveries so far, for a job delivered again
//	                (fenced; survives leader changes)
//	P:claimed       the last claim not yet finished: "<position> <count> [token]",
//	                the first count entries after position were handed out
//	                (token: by that leader, as a batch not yet recorded)
//	P:counters      hash committed, dead_lettered (totals)
//	P:last          hash describing the last committed job: id, stream_id, token,
//	                attempts, committed_at
//	P:dead          sorted set of dead job IDs, scored by failure time (ms)
//	P:dead:<id>     hash: id, payload, enqueued_at, stream_id, error, attempts,
//	                failed_at, token
//	P:paused        present (value: unix ms) while an operator has paused the
//	                queue: the leader claims no new job
//	P:enqueued      pub/sub channel: Enqueue publishes each new job ID (and
//	                Resume "resume"), and Worker.Notify (wired to it) wakes
//	                an idle leader
//	E               the lock's epoch counter, INCRed on each new leadership;
//	                read by Stats
//	F               the fence (Config.FenceKey): the highest token a fenced
//	                script accepted, raised by each of them and by the lock
//	                (an operator's epoch raise, say); with one lock node the
//	                lock passes E itself, which every new leadership raises
//	                (a fenced script writes E only for a token above it:
//	                after Redis lost the epoch)
//
// The leader works in steps (step.lua), one round trip each: a step
// records the outcomes of the jobs the leader finished (committed or
// dead-lettered, in order), gives back the claims of jobs it never
// started, and claims the next jobs after P:position: up to
// WorkerConfig.Batch of them, noted in P:claimed (the claimed entries are
// read by an XRANGE pipelined behind the script). The script compares the
// token with F first and changes nothing when the token is lower;
// otherwise it raises F to the token, advances P:position to the last finished entry, trims the
// finished entries from the stream (so XLEN is the number of pending
// jobs) and updates the counters, all in one atomic step. It also refuses
// outcomes that are not the entries after P:position, and treats a resent
// step whose last outcome is at P:position as done.
//
// A claim that finds P:claimed still covering the head of the queue (its
// leader was lost, or a job failed; not this leader's own claim sent
// again after a lost reply) hands out one job at a time, counting
// each delivery in P:attempts (the lost claim counts as one), until past
// it: a job that kills its leaders is dead-lettered alone, not with its
// batch-mates.
//
// # Guaranteed
//
//   - Order: jobs are handed to the handler one at a time, in stream order,
//     which is enqueue order as Redis saw it. With Batch 1, job n+1 starts
//     only after job n was committed or dead-lettered; with group commit,
//     a batch starts only after the one before it was recorded.
//   - At-least-once: a job is finished only by a commit. A job in flight
//     when its leader dies, is stopped, or loses its lease is delivered
//     again (with a higher Job.Attempt) by the next leader, which resumes
//     right after the last committed job. With group commit, so is every
//     job of the lost leader's batch: the ones it finished but had not
//     committed, and the ones it never reached (at most Batch jobs, or
//     about BatchWindow of work). A stopped leader (ctx done, lease still
//     valid) commits the jobs it finished and gives back the rest. So is a job whose commit a Redis
//     failover lost (async replication): the leader finds the committed
//     position behind its own last commit and resumes from it.
//   - Fencing (Kleppmann's rule): once a fenced script accepted a token (a
//     new leader's first claim), a leader with a lower token cannot claim,
//     commit or dead-letter anything, and its step leaves no trace;
//     Process then returns an error wrapping ErrStaleToken. So it does
//     when the handler's own store found the token stale (a handler error
//     wrapping ErrStaleToken: the HTTP handler's 409): the jobs finished
//     before that one are recorded, and that job and the rest of its batch
//     given back without counting a delivery, when Redis's fence still
//     admits the token (else nothing is recorded). A token that
//     was minted and never used (a Redlock attempt that failed after the
//     epoch authority granted it) fences no one; an operator's epoch raise
//     fences every token below the raised epoch at once. Process also checks
//     Lease.Valid before each job and before recording it. Jobs run under
//     the context Process is given; its owner (package leader) cancels it
//     when the lease's deadline passes, and a renewal moves that deadline,
//     so a long job may outlast one lease period, never the lease.
//   - Bounded retries: a failing job is retried with jittered exponential
//     backoff, then dead-lettered after MaxAttempts deliveries. Deliveries
//     are counted in Redis, so a job that keeps killing or outliving its
//     leaders is dead-lettered too instead of looping forever; a lost
//     batch counts one delivery for each of its jobs, started or not. A
//     handler error wrapping ErrPermanent (the HTTP handler's 4xx other
//     than 408, 409 and 429) dead-letters the job at once. A handler
//     that panics fails that attempt (the stack is logged once), so a job
//     that always panics is dead-lettered with the panic as its error.
//   - Payloads: Enqueue refuses an empty payload and one above MaxPayload.
//   - Batches: EnqueueMany adds up to MaxBatch jobs in one MULTI/EXEC, all
//     or none, contiguous and in order; a batch with any bad payload is
//     refused whole before anything is written.
//   - Pause: while P:paused exists, a step claims no job (checked after
//     the fence), so the leader keeps its lock and takes nothing new; the
//     job (or batch) in flight when Pause came finishes and is committed.
//     Resume deletes the flag and wakes the leader.
//
// # Not guaranteed
//
//   - Exactly-once side effects outside Redis. A handler can run twice for
//     one job (and, for a moment, a stale leader's handler can still be
//     running when the next leader starts it). Handlers make their effects
//     idempotent by Job.ID, or pass the fencing token to a store that
//     rejects tokens below the highest it has seen.
//   - Durability beyond Redis's own: the queue is as durable as the Redis
//     that holds it. Without AOF (appendfsync always) a Redis restart can
//     lose jobs, commits and the epoch itself; see docs/safety.md.
//   - Timeliness for an idle leader without notices: it is woken by
//     Worker.Notify (enqueue notices), and otherwise looks for new jobs
//     every PollInterval (jittered). A busy leader takes the next job at
//     once.
//   - An exact attempt count: a step retried after a Redis error may count
//     a redelivery twice.
//   - That P:position moves only through Process: the steps assume the
//     entries after it change only by their own trimming (no XDEL by hand).
package jobs
