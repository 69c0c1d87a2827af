// Package config reads lockworker's settings from the environment with
// github.com/caarlos0/env and checks that they make sense together.
//
// Every error names the environment variable at fault, so an operator can
// fix it without reading Go. Secrets (Redis passwords inside REDIS_URLS,
// JOBS_TOKEN) are kept out of String and of every error message.
package config
