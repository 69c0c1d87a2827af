// Package httpapi is lockworker's HTTP surface: /healthz, /readyz, /status,
// /metrics and, when a token is configured, POST /jobs: one job per request,
// or one per line of an NDJSON body, all enqueued or none; delayed
// (Lockworker-Not-Before) or enqueued once per idempotency key
// (Idempotency-Key: a retry answers 200 with the first job's ID). With the
// admin token, /api/schedules adds, lists and removes schedules.
//
// ConnLimiter bounds the open connections and sets the server's timeouts:
// those still sending their headers apart from those being served, per
// client address too, so half-open connections never take a place a
// finished request needs, and the probes answer when every place is busy.
// The body bytes of POST /jobs in flight are bounded across requests
// (Config.MaxBodyInFlight). What one client may still hold is bounded by
// those; the places of finished requests are not shared out by address.
//
// It shows nothing secret: no lock value, no Redis password, no job token.
// It changes nothing about leadership; it only reads snapshots, enqueues
// and stores schedules.
package httpapi
