package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestEvictingRedisExit2: the daemon on a Redis that evicts keys exits 2
// at start-up with a message naming the node, its policy and the fix.
func TestEvictingRedisExit2(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	var out strings.Builder
	err := runCLI(t, nil, append(fastEnv(r.URL()), "WORKER_ID=w1", fmt.Sprint("PORT=", redistest.FreePort(t))), &out)
	if exitCode(err) != 2 {
		t.Fatalf("lockworker on an allkeys-lru Redis: %v (exit %d), want exit 2", err, exitCode(err))
	}
	for _, want := range []string{r.Addr(), "maxmemory-policy allkeys-lru", "CONFIG SET maxmemory-policy noeviction"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestEnqueueOnFullRedis: `lockworker enqueue` on a noeviction Redis
// whose memory is full exits non-zero (1: Redis refused, not the input)
// and says Redis is full, for one job and for --lines.
func TestEnqueueOnFullRedis(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory", "3mb", "--maxmemory-policy", "noeviction"}})
	env := fastEnv(r.URL())
	payload := strings.Repeat("x", 256<<10)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = runCLI(t, []string{"enqueue", payload}, env, &strings.Builder{})
	}
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "Redis is full") {
		t.Fatalf("enqueue on a full Redis: %v (exit %d)", err, exitCode(err))
	}
	err = run(t.Context(), []string{"enqueue", "--lines"}, config.Getenv(env), strings.NewReader("\""+payload+"\"\n1\n"), &strings.Builder{}, &strings.Builder{})
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "Redis is full") || !strings.Contains(err.Error(), "nothing enqueued") {
		t.Fatalf("enqueue --lines on a full Redis: %v (exit %d)", err, exitCode(err))
	}
}
