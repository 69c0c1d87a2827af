// Package daemon assembles one lockworker replica from its configuration:
// the Redis backend, one lane per partition (leader.Lane, one with
// PARTITIONS=1) with its job worker, the coordinator that tells each lane
// whether to contend, the renewer that renews the lanes' leases together,
// the notices, the metrics, the fleet registry record, the leadership
// history, the operator's step-down requests, the dashboard and the HTTP
// surface, and runs them. One partition or many take the same path; only
// what /status, the record, the metrics and the page show of "the lock"
// differs when there is one.
//
// Guaranteed: Run owns every goroutine it starts (one errgroup) and returns
// only after they returned, with one exception: when SHUTDOWN_TIMEOUT runs
// out after a signal, Run stops the rest, waits a further bounded while
// (shutdownGrace) and returns the timeout error even if a stuck callback
// is still running, so the process can exit. The Redis clients are closed
// only after that wait. On a signal the replica first removes its registry
// record (announced, so the others contend for its partitions at once),
// then each lane that leads stops its work and releases its lock with the
// notice. At start-up, a Redis node that refuses the replica for good
// (backend.Probe: wrong password, no such database, TLS that cannot work)
// ends Run at once with a configuration error; an unreachable one is
// retried. So do a PARTITIONS that is not the fleet's
// (backend.CheckPartitions) and a WORKER_ID a live replica's registry
// record holds: no lane acquires, and nothing is written under the name,
// before both are checked. Once they are, the replica records the
// partition count again whenever it has vanished from Redis.
//
// The registry record, the history and the dashboard are for people: a
// Redis error there is logged and retried, and never touches leadership
// (the coordinator keeps its last plan while the registry does not
// answer). A step-down request is acted on only by the leadership whose
// token it names (package operator).
//
// A lane leads only after the fleet's partition count was read and only
// on a Redis whose every master runs maxmemory-policy noeviction (read
// with INFO memory at start-up, where another policy is a configuration
// error, and every 4 RENEW_INTERVALs, 1s to 15s): every lane asks these
// guards before each acquire, and a lane that leads when one starts to
// refuse ends its work (and /readyz answers 503 until the policy is safe
// again). Each lane is told of the tokens the registry and the history
// name, for its acquire's floor. Every lane says why it does not lead, in
// /status and on the page.
//
// Not guaranteed: anything about other replicas; see packages leader,
// redislock and jobs for what leadership and the queue promise.
package daemon
