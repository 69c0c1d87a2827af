package guest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary plays two more parts, chosen before any test runs: the
// supervisor (as lockworker's main does), and a stand-in daemon that runs
// one command through Run, for the tests that kill or freeze the daemon.
func TestMain(m *testing.M) {
	if handled, code := MaybeSupervise(os.Args); handled {
		os.Exit(code)
	}
	if os.Getenv(daemonEnv) != "" {
		os.Exit(standInDaemon())
	}
	// A race-enabled binary sleeps 1s when it exits, to let other threads
	// report; the supervisor is one here (testGuest passes GORACE on).
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}

// The stand-in daemon's settings: a shell script, its one argument, and an
// optional lease deadline measured from the daemon's start.
const (
	daemonEnv         = "GUEST_TEST_DAEMON"
	daemonArgEnv      = "GUEST_TEST_ARG"
	daemonDeadlineEnv = "GUEST_TEST_DEADLINE"
)

func standInDaemon() int {
	var deadline func() time.Time
	if s := os.Getenv(daemonDeadlineEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		at := time.Now().Add(d)
		deadline = func() time.Time { return at }
	}
	g, err := New(Config{Command: []string{"sh", "-c", os.Getenv(daemonEnv), "sh", os.Getenv(daemonArgEnv)}, AllowEnv: []string{"GORACE"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := g.Run(context.Background(), nil, nil, deadline); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
