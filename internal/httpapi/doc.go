// Package httpapi is lockworker's HTTP surface: /healthz, /readyz, /status,
// /metrics and, when a token is configured, POST /jobs.
//
// It shows nothing secret: no lock value, no Redis password, no job token.
// It changes nothing about leadership; it only reads snapshots and enqueues.
package httpapi
