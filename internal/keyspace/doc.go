// Package keyspace names every key and pub/sub channel that lockworker
// keeps in Redis for one LOCK_KEY, and nothing else names them: the lock,
// the queue, the fleet registry, the history and the operator's side take
// their names from here, so the layout is read (and changed) in one place.
// The layout below is the only description of it: the queue's package and
// its scripts point here, and a test holds them to it.
//
// A Base is one LOCK_KEY, with its Redis hash tag (TaggedKey): it names
// the fleet-level keys. A Lease is the keyspace of one lease: the lock,
// its fencing epoch and fence, its release channel and its job queue.
// Base.Lease is the lease of a fleet with one partition, Base.Partition
// the lease of each partition of a fleet with more.
//
// # Guarantees
//
//   - Every name of a Base, and of the Lease it returns, starts with the
//     tagged key and carries its hash tag, so they all share one Redis
//     Cluster slot and every multi-key script runs under Cluster. A
//     partition's names share a tag of their own (Base.Partition).
//   - From the first release on, a change to these names ships with its
//     migration (see CHANGELOG.md).
//
// # Not guaranteed
//
//   - That a key exists or holds what its name says: this package only
//     names them; the packages that own the data read and write them.
//
// # Layout
//
// For LOCK_KEY k, K is TaggedKey(k) ("{k}" unless k carries a tag of its
// own). L is a lease's lock key: K itself for Base.Lease (one partition),
// K with ":p<n>" added inside its tag for partition n of more
// ("{lockworker:leader:p3}"). J is L:jobs, the lease's job queue.
//
// Fleet-level names (Base), on the first node (where the epoch and the
// queue live):
//
//	K:partitions         the fleet's PARTITIONS, set by the first replica; a
//	                     replica or command configured otherwise is refused
//	K:replicas           sorted set: worker ID -> its record's expiry (unix ms)
//	K:replica:<worker>   one replica's record (JSON), PX a few refresh periods
//	K:fleet              pub/sub channel: a record changed (who, in which state)
//	K:history            capped stream of leaderships (token, worker, start, how
//	                     the previous one ended)
//	K:history:ended      hash: how the last leadership of the lease that ended
//	                     on purpose ended (token, worker, reason, at); with
//	                     partitions K:history:ended:p<n>, still under K's tag
//	K:skips              capped stream of operators' skips of parked keys
//	                     (partition, key, job, by, reason; the entry ID is when)
//	K:control            pub/sub channel: an operator changed something
//	                     (step down, pause, resume); listeners re-read it
//
// One lease's names (Lease). The lock lives on every lock node; the rest
// on the epoch authority (the first node):
//
//	L                    the lock: "<secret>:<token>:<worker>", PX TTL; the
//	                     secret is random (>= 128 bits), token and worker are
//	                     for people
//	L:epoch              the fencing counter, a plain integer: the last token minted
//	L:epoch:last         "<sha1 of a lock value>:<token>" of the last tagged bump
//	L:epoch:fence        with Redlock, the lowest token the job store accepts: the
//	                     highest token a fenced write carried or a won quorum's
//	                     bump minted, or the epoch an operator raised (one
//	                     lock node fences on L:epoch instead)
//	L:released           pub/sub channel; a release publishes the worker ID on it
//	L:stepdown           the token an operator asked to step down, PX
//	J:g:<member>         list: one group's unfinished jobs, in order, each an entry
//	                     "1 <id> <enqueued ms>[ <field>...]\n<key>\n<payload>" (fields:
//	                     due=<ms> of a delayed job or a schedule's tick, schedule=<name>,
//	                     idem=<idempotency key>, from=<dead letter requeued>); a job's
//	                     place is its due time, or its enqueue time without one. The
//	                     head is the next job, or the first of the run in flight. A
//	                     group is a key's jobs ("k:<key>"), the keyless jobs of a
//	                     queue with one partition ("s"), or one keyless job of a
//	                     partitioned queue ("j:<id>")
//	J:ready              sorted set: member -> the time (unix ms) from which the
//	                     group may run: its head's place, or a retry's due time
//	                     while it backs off
//	J:delayed            sorted set: "<member>\n<entry>" -> due time (unix ms): the
//	                     delayed jobs not yet due, moved into their groups by a step
//	J:idem:<key>         the ID of the job enqueued with idempotency key <key>; PX
//	                     JOB_IDEMPOTENCY_TTL once that job finished (committed,
//	                     dead-lettered, skipped), no expiry before
//	J:schedules          hash: schedule name -> its spec (JSON: every or cron and tz,
//	                     key, payload, catchUp, createdAt); a schedule lives in the
//	                     partition of its key, or of its name without one
//	J:schedule:next      sorted set: schedule name -> its next tick (unix ms)
//	J:schedule:last      hash: schedule name -> its last tick enqueued (unix ms)
//	J:inflight           hash: member -> "<token> <first job ID> <count> <head's
//	                     enqueued ms>": the group's first count jobs, claimed by
//	                     the leader with that token
//	J:parked             hash: member -> JSON (jobId, attempts, error, parkedAt,
//	                     token): the group is held until an operator retries or
//	                     skips its first job
//	J:attempts           hash: job ID -> deliveries counted so far, for a job
//	                     delivered more than once, failed, or lost with its leader
//	J:stale              hash: job ID -> "<count> <token>": how many leaderships
//	                     in a row the job's store answered "stale token", and the
//	                     last one's token
//	J:counters           hash: pending, committed, dead_lettered, retries (totals)
//	J:last               hash: the last committed job (id, token, attempts,
//	                     committed_at)
//	J:dead               sorted set of dead job IDs by failure time (ms)
//	J:dead:<id>          hash: one dead letter (id, entry, member, error, attempts,
//	                     failed_at, token; a skipped one also skipped_by, reason)
//	J:paused             present (value: unix ms) while an operator has paused the
//	                     queue
//	J:enqueued           pub/sub channel: a job was enqueued (its ID), the queue
//	                     resumed ("resume"), a parked group released ("release")
//
// A group's list is non-empty exactly when its member is in one, and only
// one, of J:ready, J:inflight and J:parked. A schedule is in J:schedules
// exactly when it is in J:schedule:next. Package jobs says what it
// does with them; package redislock what it does with the lock's.
package keyspace
