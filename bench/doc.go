// Package bench holds lockworker's benchmarks against its peers. It is a Go
// module of its own so that the daemon never depends on the peers it is
// compared with; it reaches the daemon's packages through a replace
// directive to the parent directory.
package bench
