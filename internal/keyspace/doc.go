// Package keyspace names every key and pub/sub channel that lockworker
// keeps in Redis for one LOCK_KEY, and nothing else names them: the lock,
// the queue, the fleet registry, the history and the operator's side take
// their names from here, so the layout is read (and changed) in one place.
//
// A Base is one LOCK_KEY, with its Redis hash tag (TaggedKey): it names
// the fleet-level keys. A Lease is the keyspace of one lease: the lock,
// its fencing epoch and fence, its release channel and its job queue.
// Base.Lease is the one lease of today's lockworker.
//
// # Guarantees
//
//   - Every name of a Base, and of the Lease it returns, starts with the
//     tagged key and carries its hash tag, so they all share one Redis
//     Cluster slot and every multi-key script runs under Cluster.
//   - The names below are the ones every released version uses. From the
//     first release on, a change to them ships with its migration (see
//     CHANGELOG.md).
//
// # Not guaranteed
//
//   - That a key exists or holds what its name says: this package only
//     names them; the packages that own the data read and write them.
//
// # Layout
//
// For LOCK_KEY k, K is TaggedKey(k) ("{k}" unless k carries a tag of its
// own). Fleet-level names (Base), on the first node (where the epoch and
// the queue live):
//
//	K:replicas           sorted set: worker ID -> its record's expiry (unix ms)
//	K:replica:<worker>   one replica's record (JSON), PX a few refresh periods
//	K:fleet              pub/sub channel: a record changed (who, in which state)
//	K:history            capped stream of leaderships (token, worker, start, how
//	                     the previous one ended)
//	K:history:ended      hash: how the last leadership that ended on purpose
//	                     ended (token, worker, reason, at)
//	K:stepdown           the token an operator asked to step down, PX
//	K:control            pub/sub channel: an operator changed something
//	                     (step down, pause, resume); listeners re-read it
//
// One lease's names (Lease; today's lease has L = K). The lock lives on
// every lock node; the rest on the epoch authority (the first node):
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
//	L:jobs:stream        stream of pending jobs
//	L:jobs:position      stream ID of the last finished entry
//	L:jobs:attempts      hash: job ID -> deliveries, for a job delivered again
//	L:jobs:claimed       the last claim not yet finished
//	L:jobs:counters      hash: committed, dead_lettered
//	L:jobs:last          hash: the last committed job
//	L:jobs:dead          sorted set of dead job IDs by failure time
//	L:jobs:dead:<id>     hash: one dead letter
//	L:jobs:paused        present while an operator has paused the queue
//	L:jobs:enqueued      pub/sub channel: a job was enqueued (or the queue resumed)
//
// Package jobs documents what each queue key holds; package redislock the
// lock's.
package keyspace
