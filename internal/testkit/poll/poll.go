package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 5 * time.Millisecond

// Until checks cond every Interval until it holds, and returns how long
// that took; it fails the test, naming what it waited for, once limit
// passes first.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(Interval)
	}
	return time.Since(start)
}
