// Package demo is `lockworker demo`: a scripted run of the product with
// real processes. It starts a redis-server (appendonly) and three replicas
// of the lockworker binary on free loopback ports, enqueues jobs, hands
// over with SIGTERM, fails over after kill -9, prints a timeline, and stops
// everything it started, also when interrupted. With Config.Partitions
// above 1 the replicas share that many partitions: who leads how many, a
// SIGTERM whose partitions each lead elsewhere within milliseconds, a
// kill -9 whose partitions are taken once their leases ran out, and keyed
// jobs finished in order per key.
//
// It needs redis-server on PATH (`make demo` installs it); there is no
// embedded stand-in, because only a real Redis runs lockworker's scripts
// exactly as production does. The figures it prints come from one run on
// the local machine: an illustration, not a benchmark.
package demo
