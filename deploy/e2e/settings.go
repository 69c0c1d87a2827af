package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// settings are the variables the e2e gives the compose files through an
// env file (--env-file): the files themselves are run as shipped.
type settings struct {
	ttl, renew, retry, work time.Duration
	partitions              int // PARTITIONS; 0 means 1
}

// defaultSettings are handoverbench's, so the figures compare: LOCK_TTL
// 2s, RENEW_INTERVAL 500ms, RETRY_INTERVAL 1s. Jobs take 3s each, so the
// e2e, reading logs every 200ms, sees a job begin well before it ends.
var defaultSettings = settings{ttl: 2 * time.Second, renew: 500 * time.Millisecond, retry: time.Second, work: 3 * time.Second}

func (s settings) validate() error {
	var errs []error
	if s.ttl <= 0 || s.renew <= 0 || s.retry <= 0 || s.work <= 0 {
		errs = append(errs, errors.New("every duration must be positive"))
	}
	if 2*s.renew >= s.ttl {
		errs = append(errs, fmt.Errorf("-renew %s must be below -ttl/2 (%s)", s.renew, s.ttl/2))
	}
	return errors.Join(errs...)
}

// vars are the env file's lines; the ones the e2e does not vary are set
// too, so a .env or a shell variable cannot change what the e2e reads:
// text logs at debug level, since the renewals and retries it times are
// logged at DEBUG (a routine step of a loop is no news at INFO).
func (s settings) vars() [][2]string {
	return [][2]string{
		{"LOCK_TTL", s.ttl.String()},
		{"RENEW_INTERVAL", s.renew.String()},
		{"RETRY_INTERVAL", s.retry.String()},
		{"WORK_DURATION", s.work.String()},
		{"PARTITIONS", strconv.Itoa(max(s.partitions, 1))},
		{"SHUTDOWN_TIMEOUT", "10s"},
		{"LOCK_KEY", "lockworker:leader"},
		{"LOG_LEVEL", "debug"},
		{"LOG_FORMAT", "text"},
		{"JOBS_TOKEN", ""},
	}
}

func (s settings) envFile() string {
	var b strings.Builder
	b.WriteString("# compose-e2e settings (deploy/e2e)\n")
	for _, kv := range s.vars() {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.String()
}

func (s settings) has(name string) bool {
	for _, kv := range s.vars() {
		if kv[0] == name {
			return true
		}
	}
	return false
}

func (s settings) String() string {
	return fmt.Sprintf("LOCK_TTL=%s RENEW_INTERVAL=%s RETRY_INTERVAL=%s WORK_DURATION=%s", s.ttl, s.renew, s.retry, s.work)
}
