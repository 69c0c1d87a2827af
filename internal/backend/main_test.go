package backend

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open is Open for the configuration env names, closed at the test's end.
func open(t *testing.T, env ...string) *Backend {
	t.Helper()
	cfg, err := config.Load(config.Getenv(append(env, "LOCK_TTL=2s", "RENEW_INTERVAL=500ms")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
