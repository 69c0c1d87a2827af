// Package partition is what a partitioned fleet agrees on without talking:
// which partition a job's ordering key belongs to (Of), and which replica
// should own each partition (Assign), computed by every replica from the
// same inputs.
//
// # Guaranteed
//
//   - Of is stable: the same key and partition count give the same
//     partition in every process, version and language (xxhash64 of the
//     key's bytes, modulo the count).
//   - Assign is deterministic: replicas that read the same members compute
//     the same owners. Its owners are balanced: the most and the fewest
//     partitions a member is given differ by at most one.
//   - Assign is sticky: a member keeps the partitions it owns up to its
//     quota, so a member that joins takes only its quota from the others,
//     and a member that leaves gives up only its own partitions.
//   - The Coordinator makes a lane contend for its partition when Assign
//     gives it to this replica, when it has had no owner for a while, or
//     when Assign gives this replica nothing (more replicas than
//     partitions): a spare stands by for every partition. With one
//     partition every replica contends, as a lock's followers do.
//
// # Not guaranteed
//
//   - One owner. Assign says who should own a partition; the partition's
//     lease says who does. Replicas whose views differ for a moment may
//     both contend for a partition, and the lease lets one of them in.
//   - Order across partitions, or across keys of different partitions.
package partition
