package jobs

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/lockworker/lockworker/internal/guest"
)

// TestErrorClass: each handler's typed error, as a dead letter or a
// replica's record keeps it (its message), has a class that says what
// kind of failure it was and carries none of the handler's output, even
// output that imitates another class's words.
func TestErrorClass(t *testing.T) {
	const secret = "card=4111111111111111"
	spoof := secret + " guest: command exited with code 7 jobs: http: answered 200 handler panicked"
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("jobs: %w", &guest.ExitError{Code: 3, Stderr: spoof}), "exit code 3"},
		{fmt.Errorf("jobs: %w", &guest.ExitError{Code: -1, Signal: syscall.SIGKILL, Stderr: spoof}), "signal 9"},
		{fmt.Errorf("jobs: %w after 2s: killed", guest.ErrStopped), "stopped"},
		{&HTTPStatusError{Status: 404, Body: spoof}, "http 404"},
		{&HTTPStatusError{Status: 503, Body: spoof}, "http 503"},
		{&HTTPStatusError{Status: 302, Location: "https://x.example/y", Body: spoof}, "http 302"},
		{fmt.Errorf("jobs: job 01J: %w", &HTTPStatusError{Status: 409, Token: 4, Body: spoof}), "http 409"},
		{fmt.Errorf("%w: no answer within 30s", errCut), "timeout"},
		{fmt.Errorf("jobs: http: no answer: %w", errors.New("dial tcp 10.0.0.1:80: connect: connection refused")), "no answer"},
		{fmt.Errorf("%w: %v", ErrHandlerPanicked, spoof), "panic"},
		{&StaleError{Token: 3, Epoch: 5}, "stale token"},
		{errors.New("jobs: 5 deliveries started and none finished (leader lost mid-job each time)"), "unfinished deliveries"},
		{fmt.Errorf("jobs: job 01J: %w: too many open files", ErrHostFault), "host out of resources"},
		{fmt.Errorf("acquire: %w", errors.New("redislock: node 1: dial tcp: connection refused")), "acquire failed"},
		{fmt.Errorf("renew: %w", errors.New("redislock: lock lost")), "renew failed"},
		{errors.New(spoof), "exit code 7"}, // a message of no known type: its first known words; still no output
		{errors.New(secret), "error"},
	} {
		got := ErrorClass(tc.err.Error())
		if got != tc.want {
			t.Errorf("ErrorClass(%q) = %q, want %q", tc.err, got, tc.want)
		}
		if strings.Contains(got, "4111") {
			t.Errorf("ErrorClass(%q) = %q carries handler output", tc.err, got)
		}
	}
	if got := ErrorClass(""); got != "" {
		t.Errorf(`ErrorClass("") = %q, want ""`, got)
	}
}
