package main

import "fmt"

// scenario is one block of the table: the same operation measured for
// several contenders.
type scenario struct {
	id   string // short, for keys and progress
	name string // as printed
	// redlock runs on the Redlock nodes instead of the single node.
	redlock bool
	// workers is how many goroutines cycle at once.
	workers int
	// contended puts every worker on one key, each with its own client
	// (as separate replicas would be); otherwise each has its own key and
	// they share one client.
	contended  bool
	contenders []contender
	// why explains a gap when lockworker is slower than the best peer.
	why string
}

// Why lockworker can pay more per cycle than its peers; see acquire.lua and
// release.lua in internal/redislock.
const (
	whySingle = "same two round trips as the peers, and a little more work in Redis per cycle (the Redis CPU/op " +
		"column): lockworker's acquire is one Lua script that reads the key, mints the fencing token (INCR) and " +
		"sets <secret>:<token>:<worker> with PX, and its release compares the secret, deletes and PUBLISHes a " +
		"release notice; bsm runs MSETNX and PEXPIRE in a script, redsync a bare SET NX, and both release with a " +
		"compare-and-delete. The token and the notice are about two commands more in Redis a cycle; with many " +
		"goroutines Redis's single thread is the bottleneck and ops/s follow its CPU per op."
	whyRedlock = "the same round trips as redsync when the epoch authority (node 1) grants: it mints the token " +
		"inside its own acquire script; only an attempt the authority did not grant takes a second round trip to " +
		"bump the epoch there. In Redis, lockworker's acquire is a Lua script on every node (compare-before-change, " +
		"and the token on the authority) where redsync sends a bare SET NX."
	whyContended = "the winner's cycle is lockworker's (token, release notice), so the lock is busy a little longer " +
		"per hand-over; but with about 16 tries per win, failed tries dominate Redis's work, and a failed try costs " +
		"every library about the same (one script or command that finds the key taken; redsync also sends a release " +
		"to every node after it), so the gap stays small."
)

// scenarios are the cells, in table order.
func scenarios(o options) []scenario {
	return []scenario{
		{
			id: "one", name: "1 node, 1 goroutine", workers: 1,
			contenders: []contender{rawPing, rawCycle, lockworkerLib, bsmLib, redsyncLib},
			why:        whySingle,
		},
		{
			id: "many", name: fmt.Sprintf("1 node, %d goroutines, distinct keys", o.workers), workers: o.workers,
			contenders: []contender{rawCycle, lockworkerLib, bsmLib, redsyncLib},
			why:        whySingle,
		},
		{
			id: "redlock", name: fmt.Sprintf("Redlock N=%d, 1 goroutine", o.redlockNodes), redlock: true, workers: 1,
			contenders: []contender{rawCycle, lockworkerLib, redsyncLib},
			why:        whyRedlock,
		},
		{
			id: "contended", name: fmt.Sprintf("1 node, %d clients, one key (contended)", o.workers), workers: o.workers, contended: true,
			contenders: []contender{rawCycle, lockworkerLib, bsmLib, redsyncLib},
			why:        whyContended,
		},
	}
}
