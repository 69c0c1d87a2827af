package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/redistest"
)

// TestRedlockHandoverByNotice: over three Redis masters, a SIGTERMed
// leader's release notice wakes the follower, which takes over at once
// instead of waiting out the lease (10s) or its retry interval (30s).
func TestRedlockHandoverByNotice(t *testing.T) {
	var urls []string
	for range 3 {
		urls = append(urls, redistest.Start(t, redistest.Options{}).URL())
	}
	env := []string{
		"REDIS_URLS=" + strings.Join(urls, ","),
		"LOCK_TTL=10s", "RENEW_INTERVAL=2s", "RETRY_INTERVAL=30s",
		"SHUTDOWN_TIMEOUT=5s", "WORK_DURATION=50ms", "LOG_LEVEL=debug",
	}
	a := startWorker(t, "redlock-a", env...)
	eventually(t, 5*time.Second, "a leads", func() bool { return len(leaders(a)) == 1 })
	b := startWorker(t, "redlock-b", env...)
	eventually(t, 5*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	if s, _ := a.status(); !strings.Contains(strings.Join(a.lines(), "\n"), "quorum 2") || s.Token < 1 {
		t.Fatalf("a is not in Redlock mode with a token: %+v", s)
	}

	a.signal(syscall.SIGTERM)
	// A safety net far below the 10s lease: only a notice gets b there.
	eventually(t, 5*time.Second, "b leads", func() bool { return len(leaders(b)) == 1 })
	if !strings.Contains(b.out.String(), "from=waiting_to_acquire_lock to=acquiring_lock trigger=RELEASE_NOTICE") {
		t.Fatalf("b was not woken by a release notice:\n%s", b.out.String())
	}
}
