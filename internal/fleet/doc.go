// Package fleet starts and supervises local lockworker replica processes,
// and redis-server processes for them, on free loopback ports: for the demo,
// handover benchmarks and fault tests. Besides single servers it starts
// Sentinel groups (a master, replicas, sentinels) and Redis Clusters
// (redis-cli --cluster create), and forces their failovers (SENTINEL
// FAILOVER, CLUSTER FAILOVER), returning once the nodes agree on the new
// master.
//
// What it guarantees:
//   - Every process it starts is killed with SIGKILL (after a SIGCONT, so a
//     stopped process dies too) and reaped by Fleet.Close, when the context
//     given to New is done, or, on Linux, when the supervising process
//     itself dies (Pdeathsig SIGKILL), even by kill -9.
//   - Each child runs in its own process group, so a Ctrl-C typed at the
//     terminal reaches only the supervisor, which decides what the children
//     get. Process.Kill kills the child's whole group, which includes
//     commands it started itself (the exec job handler's).
//   - A child's stdout and stderr are captured (the last 4 MiB) and can be
//     copied to a writer of the caller's as they arrive.
//   - Signals go only to a process that has not been reaped yet, so a
//     reused PID is never hit.
//
// What it does not guarantee:
//   - A free port is free when it is chosen. FreePort keeps client
//     connections, other processes that use this package and Redis
//     Cluster buses off it (see FreePort), but another program may still
//     take it before the child binds it. The child then exits, and Wait
//     says so.
//   - Pdeathsig fires when the OS thread that started the child exits. Go
//     keeps its threads unless a goroutine that called runtime.LockOSThread
//     exits locked; do not start processes from such a goroutine.
//   - Grandchildren are not covered by Pdeathsig: a kill -9 of the
//     supervisor kills the children, whose own children are left to them.
//   - Status reads /status over HTTP; two polls of two replicas are not one
//     atomic view, so a leader change between them can show one leader too
//     many or too few for a moment.
package fleet
