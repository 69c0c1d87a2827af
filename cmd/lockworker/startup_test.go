package main

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestPermanentRedisErrorsExitTwo: a Redis that refuses the replica for
// good makes it exit 2 at start-up with a message naming REDIS_URLS and
// the node, never the password, instead of retrying forever.
func TestPermanentRedisErrorsExitTwo(t *testing.T) {
	processTest(t)
	locked := redistest.Start(t, redistest.Options{})
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "right-pw").Err(); err != nil {
		t.Fatal(err)
	}
	open := redistest.Start(t, redistest.Options{})
	other := redistest.Start(t, redistest.Options{})
	port := func(s *redistest.Server) string { return strconv.Itoa(s.Port) }
	tests := []struct {
		name, urls, want string
	}{
		{"wrong password", "redis://:wrong-pw-x@" + locked.Addr(), "URL 1 (" + locked.Addr() + "): WRONGPASS"},
		{"no password", locked.URL(), "URL 1 (" + locked.Addr() + "): NOAUTH"},
		{"a user the server lacks", "redis://nobody:wrong-pw-x@" + open.Addr(), "URL 1 (" + open.Addr() + "): WRONGPASS"},
		{"database out of range", open.URL() + "/99", "URL 1 (" + open.Addr() + "): ERR DB index is out of range"},
		{"TLS to a plain server", "rediss://127.0.0.1:" + port(open), "URL 1 (" + open.Addr() + "): the server does not speak TLS"},
		{"one Redlock node refuses", strings.Join([]string{open.URL(), "redis://:wrong-pw-x@" + locked.Addr(), other.URL()}, ","),
			"URL 2 (" + locked.Addr() + "): WRONGPASS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary)
			cmd.Env = append(fastEnv(tt.urls), "PORT="+strconv.Itoa(redistest.FreePort(t)))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v; want code 2\n%s", err, out)
			}
			if !strings.Contains(string(out), "lockworker: REDIS_URLS: "+tt.want) {
				t.Fatalf("output lacks %q:\n%s", "REDIS_URLS: "+tt.want, out)
			}
			if strings.Contains(string(out), "wrong-pw-x") || strings.Contains(string(out), "right-pw") {
				t.Fatalf("a password in the output:\n%s", out)
			}
		})
	}
}

// TestCLIReportsRedisErrorsItself: a one-shot command that cannot reach
// Redis says so in one line of its own, naming the node and REDIS_URLS,
// and prints none of go-redis's log lines.
func TestCLIReportsRedisErrorsItself(t *testing.T) {
	processTest(t)
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	want := "lockworker: cannot reach Redis at " + addr + " (REDIS_URLS): connection refused"
	for _, args := range [][]string{{"status"}, {"history"}, {"enqueue", "x"}, {"epoch"}, {"deadletters"},
		{"requeue", "X"}, {"stepdown"}, {"pause"}, {"resume"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = fastEnv("redis://" + addr)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%v: %v; want exit code 1\n%s", args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%v printed\n%s\nwant\n%s", args, got, want)
		}
	}
}
