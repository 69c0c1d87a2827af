package jobs

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/guest"
)

// The test binary is also the exec handler's supervisor (package guest), as
// lockworker's main is.
func TestMain(m *testing.M) {
	if handled, code := guest.MaybeSupervise(os.Args); handled {
		os.Exit(code)
	}
	// A race-enabled binary sleeps 1s when it exits; the supervisor is one
	// here, and the tests pass GORACE on to it (testEnv).
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}

// testEnv is the daemon variables the tests' commands may see.
var testEnv = []string{"GORACE"}
