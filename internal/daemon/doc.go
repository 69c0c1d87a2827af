// Package daemon assembles one lockworker replica from its configuration:
// the Redis backend, the leader and its state machine, the job worker, the
// notices, the metrics, the fleet registry record, the leadership history,
// the operator's step-down requests, the dashboard and the HTTP surface,
// and runs them.
//
// Guaranteed: Run owns every goroutine it starts (one errgroup) and returns
// only after they returned, with one exception: when SHUTDOWN_TIMEOUT runs
// out after a signal, Run stops the rest, waits a further bounded while
// (shutdownGrace) and returns the timeout error even if a stuck callback
// is still running, so the process can exit. The Redis clients are closed
// only after that wait. A replica that leads releases the lock on the way
// out (through the machine's cleanup and releasing_lock states). At
// start-up, a Redis node that refuses the replica for good (backend.Probe:
// wrong password, no such database, TLS that cannot work) ends Run at once
// with a configuration error; an unreachable one is retried. So do a
// PARTITIONS that is not the fleet's (backend.CheckPartitions) and a
// WORKER_ID a live replica's registry record holds: no lane acquires, and
// nothing is written under the name, before both are checked. Once they
// are, the replica records the partition count again whenever it has
// vanished from Redis.
//
// The registry record, the history and the dashboard are for people: a
// Redis error there is logged and retried, and never touches leadership.
// A step-down request is acted on only by the leadership whose token it
// names (package operator).
//
// A replica leads only on a Redis whose every master runs
// maxmemory-policy noeviction (read with INFO memory at start-up, where
// another policy is a configuration error, and every 4 RENEW_INTERVALs,
// 1s to 15s, after which a leader gives its leadership up and /readyz
// answers 503 until the policy is safe again). Each lane's leader is told
// of the tokens the registry and the history name, for its acquire's
// floor.
//
// Not guaranteed: anything about other replicas; see packages leader,
// redislock and jobs for what leadership and the queue promise.
package daemon
