package partition

import "github.com/cespare/xxhash/v2"

// Max is the most partitions a fleet may have.
const Max = 1024

// Of is the partition of ordering key key among n partitions (n >= 1):
// xxhash64 (XXH64, seed 0) of the key's bytes, modulo n. Every job of one
// key lands on one partition, and so runs in enqueue order.
func Of(key string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(xxhash.Sum64String(key) % uint64(n))
}
