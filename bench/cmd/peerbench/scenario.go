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

// Why lockworker pays more per cycle than its peers; see acquire.lua and
// release.lua in internal/redislock.
const (
	whySingle = "same two round trips as the peers, but more work in Redis per cycle (the Redis CPU/op column): " +
		"lockworker's acquire is one Lua script that, besides SET PX, bumps the fencing epoch (GET, INCR and " +
		"SET of the epoch tag) and rewrites the holder hash (DEL, HSET, PEXPIRE), and its release deletes two " +
		"keys and PUBLISHes a release notice; bsm runs one SET NX in a script, redsync sends a bare SET NX, and " +
		"both release with a compare-and-delete. With one goroutine that work is on every cycle's path; with " +
		"many, Redis's single thread is the bottleneck and ops/s fall in proportion."
	whyRedlock = "with several nodes lockworker's acquire is two sequential round trips: the quorum SET " +
		"on all nodes, then the epoch bump on the epoch authority (node 1, which also records the token for " +
		"status when it granted); redsync's is one. Three round trips a cycle against two: that is " +
		"what a fencing token that is monotonic across quorums costs (per-node counters would be cheaper, " +
		"and unsafe)."
	whyContended = "the winner's cycle is lockworker's longer one (epoch, holder hash, PUBLISH on release), " +
		"so the lock is busy a little longer per hand-over; but with about 16 tries per win, failed tries " +
		"dominate Redis's work, and a failed try costs every library about the same (one script or command " +
		"that finds the key taken; redsync also sends a release to every node after it), so the gap stays small."
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
