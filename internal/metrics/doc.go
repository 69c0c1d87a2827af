// Package metrics exposes lockworker's Prometheus metrics on its own
// registry (never the global one, so tests can build several daemons).
//
// It records what the daemon tells it and reads snapshots at scrape time;
// it holds no lock state of its own and shows nothing secret.
package metrics
