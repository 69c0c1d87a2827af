package main

import (
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/redistest"
)

// TestEnqueueArguments: -h helps and enqueues nothing, -- lets a payload
// start with a dash, and every payload is held to 1 byte .. 1 MiB, from
// arguments or stdin.
func TestEnqueueArguments(t *testing.T) {
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	var out strings.Builder
	if err := runCLI(t, []string{"enqueue", "-h"}, env, &out); err != nil || !strings.Contains(out.String(), "usage: lockworker enqueue") {
		t.Fatalf("enqueue -h: %v %q", err, out.String())
	}
	if err := runCLI(t, []string{"enqueue", "--", "-h"}, env, &out); err != nil {
		t.Fatalf("enqueue -- -h: %v", err)
	}
	big := strings.Repeat("x", 1<<19)
	for name, args := range map[string][]string{
		"many arguments over 1 MiB": {"enqueue", big, big, big},
		"an empty argument":         {"enqueue", ""},
		"empty stdin":               {"enqueue"},
		"an unknown flag":           {"enqueue", "--fast", "x"},
	} {
		if err := runCLI(t, args, env, &strings.Builder{}); exitCode(err) != 2 {
			t.Errorf("%s: %v; want exit code 2", name, err)
		}
	}
	if s := queueStatus(t, env); s.Pending != 1 {
		t.Fatalf("%d jobs pending, want only the one whose payload is -h", s.Pending)
	}
	if err := runCLI(t, []string{"deadletters", "--n", "-1"}, env, &strings.Builder{}); exitCode(err) != 2 {
		t.Fatalf("deadletters --n -1: %v; want exit code 2", err)
	}
}
