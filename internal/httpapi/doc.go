// Package httpapi is lockworker's HTTP surface: /healthz, /readyz, /status,
// /metrics and, when a token is configured, POST /jobs: one job per request,
// or one per line of an NDJSON body, all enqueued or none.
//
// It shows nothing secret: no lock value, no Redis password, no job token.
// It changes nothing about leadership; it only reads snapshots and enqueues.
package httpapi
