// Package bearer is the one rule for lockworker's bearer tokens (JOBS_TOKEN
// for POST /jobs, ADMIN_TOKEN for the operator actions) and the check of a
// request against one: "Authorization: Bearer <token>", compared in
// constant time.
//
// It does not issue, store or rotate tokens, and it does not slow down
// guessing: a token of MinLen or more random bytes needs no rate limit,
// and a shorter one is refused.
package bearer
