package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestEpochRaiseRepairsTheFleet: `lockworker epoch --raise-to N` under a
// running fleet that is processing jobs: tokens handed out afterwards are
// above N, the leader whose token is now stale gives its leadership up,
// and every job is processed without a restart, within about one
// LOCK_TTL of the raise.
func TestEpochRaiseRepairsTheFleet(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL()) // LOCK_TTL=2s, WORK_DURATION=50ms
	a := startWorker(t, "repair-a", env...)
	b := startWorker(t, "repair-b", env...)
	leaderOf(t, 10*time.Second, a, b)
	enqueueN(t, env, 60) // about 3s of work
	poll.Until(t, 10*time.Second, "processing under way", func() bool { return queueStatus(t, env).Committed >= 5 })

	var out strings.Builder
	if err := runCLI(t, []string{"epoch"}, env, &out); err != nil {
		t.Fatalf("epoch: %v\n%s", err, out.String())
	}
	before, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil || before < 1 {
		t.Fatalf("epoch printed %q", out.String())
	}
	n := before + 1000
	out.Reset()
	if err := runCLI(t, []string{"epoch", "--raise-to", strconv.FormatInt(n, 10)}, env, &out); err != nil {
		t.Fatalf("epoch --raise-to: %v\n%s", err, out.String())
	}
	raised := time.Now()
	// A leader change between the two commands may have bumped the epoch
	// past before; it cannot have reached n.
	var from, to int64
	if _, err := fmt.Sscanf(strings.TrimSpace(out.String()), "epoch raised from %d to %d", &from, &to); err != nil || from < before || to != n {
		t.Fatalf("epoch --raise-to printed %q, want \"epoch raised from <at least %d> to %d\"", out.String(), before, n)
	}
	lastToken := func() int64 {
		tok, _ := r.Client().HGet(t.Context(), keys(t).Lease().Last(), "token").Int64()
		return tok
	}
	poll.Until(t, 10*time.Second, "a commit under a token above N", func() bool { return lastToken() > n })
	recovered := time.Since(raised)
	poll.Until(t, 20*time.Second, "every job committed", func() bool {
		s := queueStatus(t, env)
		return s.Pending == 0 && s.Committed == 60
	})
	t.Logf("first commit above the raised epoch %s after the raise (LOCK_TTL 2s)", recovered)
	if s := queueStatus(t, env); s.Epoch <= n || s.Token <= n {
		t.Fatalf("after the raise: epoch %d, holder token %d; want both above %d", s.Epoch, s.Token, n)
	}
	noStaleWorking(t, n+1, a, b)

	// Raising to a lower value changes nothing; the epoch never goes down.
	out.Reset()
	if err := runCLI(t, []string{"epoch", "--raise-to", "3"}, env, &out); err != nil || !strings.Contains(out.String(), "unchanged") {
		t.Fatalf("epoch --raise-to 3: %v %q", err, out.String())
	}
	if s := queueStatus(t, env); s.Epoch <= n {
		t.Fatalf("epoch %d after raising to a lower value", s.Epoch)
	}
}

// TestEpochUsage: bad arguments are usage errors (exit 2) and -h helps.
func TestEpochUsage(t *testing.T) {
	for _, args := range [][]string{{"epoch", "--raise-to", "-5"}, {"epoch", "--raise-to", "x"}, {"epoch", "7"}} {
		err := runCLI(t, args, nil, &strings.Builder{})
		if exitCode(err) != 2 {
			t.Errorf("%v: %v; want exit code 2", args, err)
		}
	}
}
