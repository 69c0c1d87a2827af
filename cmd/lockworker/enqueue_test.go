package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/redislock"
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

// TestEnqueueLines: --lines adds one job per non-empty line of stdin, in
// order, and prints their IDs in that order; a bad line, a broken limit or
// a misuse exits 2, names the line and enqueues nothing.
func TestEnqueueLines(t *testing.T) {
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	stream := redislock.JobsPrefix(redislock.TaggedKey("lockworker:leader")) + ":stream"
	queue := func() (ids, payloads []string) {
		t.Helper()
		msgs, err := r.Client().XRange(t.Context(), stream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			ids, payloads = append(ids, m.Values["id"].(string)), append(payloads, m.Values["payload"].(string))
		}
		return ids, payloads
	}
	enqueue := func(stdin string, args ...string) (string, error) {
		t.Helper()
		var out strings.Builder
		err := run(t.Context(), append([]string{"enqueue"}, args...), config.Getenv(env), strings.NewReader(stdin), &out, &out)
		return out.String(), err
	}

	out, err := enqueue("first job\n\nsecond job\r\n-3\nlast, no newline", "--lines")
	if err != nil {
		t.Fatalf("enqueue --lines: %v\n%s", err, out)
	}
	ids, payloads := queue()
	if printed := strings.Fields(out); !slices.Equal(printed, ids) || len(ids) != 4 || !slices.IsSorted(ids) {
		t.Fatalf("printed %q, queue holds %q: want the same 4 IDs in order", printed, ids)
	}
	if want := []string{"first job", "second job", "-3", "last, no newline"}; !slices.Equal(payloads, want) {
		t.Fatalf("payloads %q, want %q", payloads, want)
	}

	long := strings.Repeat("x", jobs.MaxPayload)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		msg         string
	}{
		{"a line too long in the middle", "a\n" + long + "\n" + long + "x\nd\n", nil, "enqueue: line 3: longer than 1 MiB; nothing enqueued"},
		{"a line too many", strings.Repeat("j\n", jobs.MaxBatch+1), nil, "enqueue: line 1001: more than 1000 lines; nothing enqueued"},
		{"too much in all", strings.Repeat(long+"\n", 8), nil, "enqueue: more than 8 MiB in all; nothing enqueued"},
		{"only empty lines", "\n\n", nil, "enqueue: no lines (empty lines are skipped); nothing enqueued"},
		{"arguments too", "a\n", []string{"b"}, "--lines reads the jobs from stdin and takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := enqueue(tc.stdin, append([]string{"--lines"}, tc.args...)...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), tc.msg) || out != "" {
				t.Fatalf("enqueue --lines: %v (exit %d), printed %q; want exit 2 and %q", err, exitCode(err), out, tc.msg)
			}
			if ids, _ := queue(); len(ids) != 4 {
				t.Fatalf("%d jobs in the queue, want still 4", len(ids))
			}
		})
	}
	if out, err := enqueue("", "-h"); err != nil || !strings.Contains(out, "--lines") {
		t.Fatalf("enqueue -h: %v %q", err, out)
	}
}
