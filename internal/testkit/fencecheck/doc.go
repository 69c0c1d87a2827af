// Package fencecheck is the referee of the fault tests: a fenced store that
// records every write made on behalf of a job, and a check of the recorded
// history.
//
// A write carries the worker that made it, its fencing token, the job's ID
// and the job's sequence number (its position in enqueue order, 0-based).
// With fencing on, Store.Write rejects a token below the highest token it
// has accepted (in the write's partition), as a store guarding a real side effect would; every write,
// accepted or rejected, is recorded in arrival order. Handler puts the store
// behind HTTP so other processes can write to it.
//
// # What Check calls a violation
//
// Delivery is at-least-once, so a job's effect may legitimately be accepted
// twice: a leader writes it, loses its lease before the queue's commit, and
// the next leader (with a higher token) runs the job again. Check therefore
// looks at the accepted writes in arrival order and allows exactly that:
//
//   - TokenDecreased: an accepted token below one accepted before it. Two
//     leaders' effects interleaved, which is the split brain fencing exists
//     to prevent (a stale leader's write landing after its successor's).
//   - TokenReused: one token used by two workers (accepted or not). Tokens
//     must be unique per leadership.
//   - Duplicated: a job's effect accepted twice under the same token. One
//     leadership runs a job to completion once; a redo needs a new leader.
//   - Reordered: an effect for a job other than the next one, or (at a
//     change of token) other than the last one or the next one. A new leader
//     resumes right after the last committed job, so it may redo only the
//     job whose commit was lost.
//   - Lost: a job whose effect was never accepted, found as a gap or at the
//     end (fewer effects than jobs).
//   - Mismatch: one sequence number seen with two job IDs, or a number
//     outside [0, jobs).
//
// So, once a change of token has collapsed at most one redo, the accepted
// effects must read exactly 0, 1, ..., jobs-1.
//
// With group commit (CheckBatch, JOB_BATCH=b) a leader commits up to b
// jobs at once, so the one that replaces a lost leader may redo, in order,
// up to b jobs: at a change of token the next effect may be any of the
// last b jobs or the next one, and the new leader goes on from there in
// order. A redo reaching further back, a skip inside it, or a redo under
// the same token is still a violation.
//
// # Partitions
//
// A write also names its partition (the one whose token it carries) and
// its job's ordering key. The store fences each partition on its own:
// tokens of different partitions are unrelated. CheckPartitions judges a
// partitioned queue: each partition as CheckBatch judges a queue (its jobs
// in its own enqueue order, its tokens strictly increasing from one
// leadership to the next in commit order), plus WrongPartition (a job
// committed under another partition's token) and KeyReordered (two jobs of
// one key taking effect out of enqueue order).
//
// # Runs, parks and time
//
// Beside the writes, a Store keeps a log (Events) of every run's begin
// and end (a write, or a failure the run reports) and of the operator's
// decisions (a park seen, a retry, a skip). CheckRuns judges that log by
// what the keys model promises of each run: never two runs of one group
// in flight under one partition's token (KeyOverlap), no run of a job
// before every earlier job of its group has an accepted effect or was
// skipped (KeyEarly; ParkBroken when that earlier job was parked), no
// delayed job begun before its due time (DelayedEarly), no tick of a
// schedule taking effect as two jobs or twice under one token
// (TickDuplicate), no second job for an idempotent enqueue
// (EnqueuedTwice). CheckAll runs both checks, excusing from Lost the jobs
// an operator skipped. A run killed mid-way reports no end: it stays in
// flight under its token, which the daemon never uses again.
//
// # What it does not do
//
// Check judges one history against one queue that starts empty and whose
// jobs were enqueued in sequence order. It knows nothing of time: a leader
// that does nothing wrong while another also believes it leads is not a
// violation (only its effects are judged). A store with fencing off
// (Config.Unfenced) accepts everything, so that Check can be shown to catch
// what fencing prevents.
package fencecheck
