package config

import (
	"testing"

	"github.com/lockworker/lockworker/internal/redislock"
)

// The configuration's minimum TTL is the lock's, so a value it accepts is
// never refused later with a message that does not name LOCK_TTL.
func TestMinLockTTLIsTheLocks(t *testing.T) {
	if MinLockTTL != redislock.MinTTL {
		t.Fatalf("MinLockTTL %s, redislock.MinTTL %s", MinLockTTL, redislock.MinTTL)
	}
}
