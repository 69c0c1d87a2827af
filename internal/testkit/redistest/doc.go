// Package redistest starts real redis-server processes on free loopback
// ports for tests, and stops them when the test ends: single servers,
// replicas of them, Sentinel groups and Redis Clusters (package fleet
// starts them; see its SentinelGroup.Failover and RedisCluster.Failover).
//
// It never touches port 6379 and never relies on a Redis someone left
// running. A server can be stopped (SIGSTOP), resumed, killed and restarted
// on the same port, which is how the lock and fault tests inject failures.
// Under -short (the unit tier) every starter skips its test instead. It
// does not install redis-server: `make test` does that.
package redistest
