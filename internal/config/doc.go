// Package config reads lockworker's settings from the environment with
// github.com/caarlos0/env and checks that they make sense together,
// including per REDIS_MODE (a sentinel setting outside sentinel mode, a
// sentinel mode without a master group, cluster URLs that disagree).
//
// Every error names the environment variable at fault, so an operator can
// fix it without reading Go. Secrets (Redis passwords inside REDIS_URLS,
// REDIS_SENTINEL_PASSWORD, JOBS_TOKEN, ADMIN_TOKEN, the password inside
// JOB_URL, JOB_URL_TOKEN: every field tagged `secret`) are
// kept out of String, GoString, LogValue and every error message by the
// tag, not by searching the text; Scrub takes them out of other text by
// their place (package redact), and searches for the long ones only.
package config
