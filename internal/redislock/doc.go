// Package redislock is the lock behind lockworker's leadership: a lease on
// one Redis key, either on a single node or, with Redlock, on a majority of
// N independent masters (N odd, at least 3), through the same code path
// (quorum N/2+1, which is 1 for one node). Each leadership gets a fencing
// token from one epoch authority.
//
// # Guarantees
//
//   - Mutual exclusion under the lease model: a Lease is valid until its
//     local monotonic deadline, the start of the acquire (or last renew)
//     attempt + TTL - drift, where drift = TTL*DriftFactor + 2ms. While
//     clocks drift by less than that, no two leases are valid at once,
//     provided no node loses its keys (see below).
//   - The lock value starts with a secret of 130 random bits from
//     crypto/rand, new for every attempt, followed by the token and the
//     worker ID (for Holder); the secret is never logged, put in an error
//     or returned by a script. Renew and release are one atomic
//     compare-and-pexpire / compare-and-delete script per node, comparing
//     the secret; renew never re-creates a missing key.
//   - Fencing tokens strictly increase across leaderships, because they come
//     from one counter (the epoch key) on one authority (Config.Epoch, default
//     Nodes[0]). The authority mints the token inside its own acquire
//     script when it grants (one round trip for the whole acquire); when it
//     is no lock node or did not grant, the epoch is bumped on it right
//     after the quorum is won. The other lock nodes are taken with a
//     plain SET NX PX, which only ever creates the key; a script runs there
//     only when the key is taken, to tell this attempt's own key (a
//     re-sent SET) from another holder's and read its TTL. Per-node
//     counters across different quorums are not monotonic and are never
//     used.
//   - Redlock mints before the quorum is known, so an attempt that fails
//     can burn a token above the working leader's. The job store must
//     therefore reject a write whose token is below the highest token it
//     has seen, on the key FenceKey names (Kleppmann's rule); the bump
//     after a won quorum, Reissue and RaiseEpoch raise that fence too. With
//     one node every mint is a leadership, and the fence is the epoch.
//   - Acquire takes a floor, the highest token the caller has observed:
//     the authority raises the epoch to it before minting, so the token
//     is above the floor even when Redis lost the epoch (a flush, an
//     eviction), and reports the epoch it found (Lease.EpochSeen). A
//     refused attempt reports the holder's token (HeldError.Token).
//   - The epoch only grows: RaiseEpoch raises it to at least N for an
//     operator repairing it (tokens after it are above N, and the fence is
//     raised to the epoch), and Reissue
//     gives a held lease a new token above a floor the holder knows of;
//     neither ever lowers it.
//   - Acquire is idempotent per attempt while its key lives: a key that
//     already holds this attempt's secret counts as acquired with the same
//     token, and a re-sent epoch bump returns the same token while no token
//     was minted since (a re-send after the key expired mints afresh, a
//     higher token; with retries off, re-sends do not happen). An attempt that failed, timed out
//     or lost its validity is released on every node that may hold its
//     value before Acquire returns (best effort, bounded by NodeTimeout; a
//     node that cannot be reached keeps the key until its TTL).
//   - Every node command runs with a deadline of min(caller's deadline,
//     now + NodeTimeout), in parallel across nodes.
//
// # Not guaranteed
//
//   - Safety when a node forgets: a node restarted without persistence
//     comes back empty and can grant the same key to a second quorum while
//     the first lease is still valid. Either keep restarted nodes down for
//     longer than the TTL, or run them with AOF and appendfsync always.
//     The epoch authority must be persistent in any case, or tokens can go
//     back after its restart; fencing in the store is then the last line.
//   - That the holder notices loss at once: the leader must stop work by
//     Deadline even when Redis does not answer, and check Valid after any
//     pause. Work must carry the token; the lock alone cannot stop a paused
//     process's late writes.
//   - Retries: Acquire tries once; the caller retries with jitter.
//     Renew distinguishes a lost lease (ErrLost: the deadline passed, or too
//     many nodes say the key is missing or someone else's) from unreachable
//     nodes (joined NodeErrors): with 3 of 5 nodes down, Renew fails without
//     ErrLost and without moving the deadline, and the caller retries until
//     the deadline, after which Renew returns ErrLost without touching Redis.
//   - Release notices (published on the release channel; package notice
//     listens) are hints for a fast handover; they can be lost, so polling
//     stays the fallback. Only Release publishes one: a failed attempt's
//     clean-up never does, so followers do not wake each other in a storm
//     of attempts that cannot succeed (say, with the epoch authority down).
//
// # Client requirements
//
// Clients given as Nodes and Epoch MUST be built with MaxRetries: -1 and
// ContextTimeoutEnabled: true. go-redis re-sends a command whose reply timed
// out or whose connection broke (MaxRetries 0 means the default 3), which
// can run a lock script twice and hide what the first run did, and stretch
// a call past the TTL. Without ContextTimeoutEnabled a context deadline does
// not bound socket reads, so a call to a frozen node can outlive the lease.
// The scripts are idempotent anyway, but the time bound needs both options.
//
// # Keys
//
// Config.Keys names them (package keyspace, the one place that names
// every key; all share one Redis Cluster hash slot). For lock key K: K holds
// "<secret>:<token>:<worker>" (token 0 on a node that did not mint it);
// K:epoch is the fencing counter, K:epoch:last tags the last bump after a
// quorum ("<sha1 of the value>:<token>"), and K:epoch:fence is the Redlock
// job store's fence (epoch authority only); the channel K:released
// receives the worker ID on every release (SPUBLISH with ShardedNotices).
//
// # Replicas
//
// An epoch mint or bump (and, in the same script, a fence raise) on a
// master with replicas is WAITed for: the token is
// returned only once every replica that can acknowledge (INFO
// replication: state online, not in a full resync; package replicas),
// and at least MinReplicas, has acknowledged the write (see replicated in replicas.go), so a failover to
// any of them cannot hand the token out again. Not guaranteed: that a
// replica that was offline at the bump, and is promoted anyway, has it;
// and renewals and releases are not WAITed, so a failover can lose or
// shorten the lock itself (the next leader's token is still higher).
package redislock
