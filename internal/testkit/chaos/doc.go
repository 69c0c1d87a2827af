// Package chaos is the fault-injection suite: it runs real lockworker
// replicas against real redis-servers, injects faults, and has every job's
// effect judged by a fenced store (package fencecheck).
//
// # Set-up
//
// A Coordinator serves a fencecheck.Store on loopback. Three replicas run
// with JOB_HANDLER=exec, the daemon's JOB_CONCURRENCY, and JOB_BATCH
// (ClusterConfig.Batch, the daemon's default unless set, so the history
// is judged by fencecheck.CheckPartitions, which allows a new leader to
// redo the last run of each key its predecessor lost); their
// JOB_COMMAND is a writer (RunWriter, built
// as cmd/chaoswriter) that reports a Begin, works for
// a moment, and posts (worker, token, job ID, sequence number) to the
// store. Jobs carry their enqueue position as the payload. Three Redis
// nodes make a Redlock; node 0, the epoch authority and the queue, runs
// with AOF (appendfsync always), the other two without persistence. Every
// replica reaches every node through an in-process toxiproxy proxy of its
// own, so one replica's links can be cut or slowed, and a node can restart
// on a new port behind a stable address.
//
// # Partitions
//
// With ClusterConfig.Partitions above 1 the replicas share that many
// partitions (PARTITIONS). Jobs then carry ordering keys (Config.KeysPer
// per partition, cycled) and Config.Backlog jobs are kept queued in each
// partition; the writer reports its partition and key, the store fences
// each partition on its own, and the history is judged by
// fencecheck.CheckPartitions (order per key, fencing per partition over
// all its keys, no job under another partition's token). With one
// partition the jobs have no key: one serial queue, judged in enqueue
// order. A fault aimed at
// "the leader" picks one partition's leader at random and waits for that
// partition to move; pexpire expires that partition's lock.
//
// # Keys, failures, parks and time
//
// The replicas run JOB_CONCURRENCY (ClusterConfig.Concurrency, 8) jobs at
// once. The writer reports each run's Begin and, when the coordinator's
// reply asks it to fail (Coordinator.FailFirst, Poison), its failure, so
// the store's log (fencecheck.Store.Events) holds every run's begin and
// end. Run mixes in jobs that fail twice then succeed, poisoned jobs that
// fail until cured (their keys park after Config.MaxAttempts), delayed
// jobs (on a delay key per partition, due in key order), jobs enqueued
// twice with one idempotency key, and a schedule every second on a key of
// its own. A resolver plays the operator: it logs each park it sees,
// leaves it 300 ms, then retries it (operator API) or skips it (the CLI),
// logging the decision before carrying it out. The whole is judged by
// fencecheck.CheckAll.
//
// Config.ScheduleFor makes a schedule run instead: no enqueued jobs, the
// schedule alone, faults of ScheduleKinds (kill -9, SIGTERM, SIGSTOP,
// Redis restart) dealt until the time has passed; Summary sorts the missed
// ticks into those due while no leadership of the schedule's partition was
// at work and those lost while one was.
//
// # Faults
//
// Dealt one at a time from a shuffled deck of the six kinds (each comes up
// once every six faults; the seed fixes the order), aimed at the current
// leader four times in five (always, for SIGSTOP): kill -9 of a replica (a new one takes its slot); SIGSTOP past the
// TTL, with the leader's writer held at Begin and stopped too, released
// only after another leader has written, so its write arrives late with a
// stale token; all traffic between a replica and all (or one) nodes dropped
// (toxiproxy timeout) or delayed by 2×TTL (latency) until another leader
// has written; a node killed and restarted (node 0 replays its AOF, the
// others come back empty, which breaks Redlock's own assumption and leaves
// safety to fencing); the lock key PEXPIREd on a majority of nodes, as a
// clock jump would. A background enqueuer keeps jobs queued, pausing only
// while a node restarts.
//
// # Guaranteed
//
//   - Run reports every violation fencecheck.CheckAll finds in the whole
//     history and log once all jobs are committed and every replica has exited
//     (so no writer is left to write after the check), and counts the
//     store's rejections of stale writes.
//   - Liveness is measured, not asserted: after each heal, the time until
//     the store accepts a write again; and the longest gap between two
//     accepted writes. Only generous safety nets (60s) fail a run.
//   - Every process is killed and every goroutine is waited for by Close.
//
// # Not guaranteed
//
//   - Repeatable timing: the seed fixes the sequence of fault kinds and
//     targets, not the interleaving of real processes.
//   - That every fault bites: a fault on a follower, or on a leader between
//     jobs, may cause no takeover. The pause fault on a leader with a job
//     in hand always produces a stale write.
//   - Anything off Linux: stopping processes is checked through /proc.
package chaos
