// Package jobs is the serial job queue in Redis: anyone enqueues, only the
// leader processes, one job at a time, in enqueue order, and every outcome
// is a fenced commit.
//
// A Queue is what producers and operators use (Enqueue, Stats,
// DeadLetters, Requeue); it needs no handler and no leadership. A Worker is
// the leader's side: Process runs a Handler on each job under the
// leadership's context and lease.
//
// # Layout
//
// With Prefix P (default "lockworker:jobs") and the lock's EpochKey E:
//
//	P:stream        stream of pending jobs (XADD *, so IDs grow monotonically);
//	                fields id (ULID), payload (raw bytes), enqueued_at (unix ms)
//	P:position      stream ID of the last finished (committed or dead-lettered) entry
//	P:attempts      hash job ID -> deliveries so far (fenced; survives leader changes)
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
// The leader claims the first entry after P:position (claim.lua, which also
// counts the delivery), runs the handler, and records the outcome with
// commit.lua or deadletter.lua. Those scripts compare the token with F first
// and change nothing when the token is lower; otherwise they raise F to the
// token and advance
// P:position to the entry, delete it from the stream (so XLEN is the number
// of pending jobs) and update the counters, all in one atomic step. They
// also refuse an entry that is not the next one after P:position, and treat
// a resent commit of the entry at P:position as done.
//
// # Guaranteed
//
//   - Order: jobs are handed to the handler one at a time, in stream order,
//     which is enqueue order as Redis saw it; job n+1 starts only after job n
//     was committed or dead-lettered.
//   - At-least-once: a job is finished only by a commit. A job in flight
//     when its leader dies, is stopped, or loses its lease is delivered
//     again (with a higher Job.Attempt) by the next leader, which resumes
//     right after the last committed job. So is a job whose commit a Redis
//     failover lost (async replication): the leader finds the committed
//     position behind its own last commit and resumes from it.
//   - Fencing (Kleppmann's rule): once a fenced script accepted a token (a
//     new leader's first claim), a leader with a lower token cannot claim,
//     commit or dead-letter anything, and its attempt leaves no trace;
//     Process then returns an error wrapping ErrStaleToken. A token that
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
//     leaders is dead-lettered too instead of looping forever. A handler
//     that panics fails that attempt (the stack is logged once), so a job
//     that always panics is dead-lettered with the panic as its error.
//   - Payloads: Enqueue refuses an empty payload and one above MaxPayload.
//   - Pause: while P:paused exists, claim hands out no job (checked in the
//     claim script, after the fence), so the leader keeps its lock and
//     takes nothing new; the job in flight when Pause came finishes and is
//     committed. Resume deletes the flag and wakes the leader.
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
//     lose jobs, commits and the epoch itself; see the README.
//   - Timeliness for an idle leader without notices: it is woken by
//     Worker.Notify (enqueue notices), and otherwise looks for new jobs
//     every PollInterval (jittered). A busy leader takes the next job at
//     once.
//   - An exact attempt count: a claim retried after a Redis error may count
//     a delivery twice.
package jobs
