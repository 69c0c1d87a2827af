package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/roster"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestCell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, spaces", "plain text, spaces"},
		{"ünïcode ok", "ünïcode ok"},
		{"clear\x1b[2Jscreen", `"clear\x1b[2Jscreen"`},
		{"title\x1b]0;pwned\x07", `"title\x1b]0;pwned\a"`},
		{"two\nlines", `"two\nlines"`},
		{"tab\tcolumn", `"tab\tcolumn"`},
		{"bad \xff utf-8", `"bad \xff utf-8"`},
		{"bidi \u202e override", `"bidi \u202e override"`},
	} {
		if got := cell(c.in); got != c.want {
			t.Errorf("cell(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestReplicasTableQuotes: the status table of replicas quotes what a
// replica's record may carry from anywhere (its host, version, error).
func TestReplicasTableQuotes(t *testing.T) {
	var out strings.Builder
	now := time.Now()
	err := printReplicas(&out, []roster.Record{{WorkerID: "w\x1b[2J", State: "working", Host: "h\x1b]0;x\x07",
		Version: "v\r1", LastError: "boom\x1b[31m", Since: now}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\r") {
		t.Fatalf("raw control characters in the table:\n%q", out.String())
	}
	for _, want := range []string{`"w\x1b[2J"`, `"h\x1b]0;x\a"`, `"v\r1"`, `"boom\x1b[31m"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %s:\n%s", want, out.String())
		}
	}
}

// TestDeadLettersQuoteEscapes: a job whose command writes escape sequences
// to stderr (clear the screen, set the window title) is dead-lettered
// with them in its error; `lockworker deadletters` prints them quoted,
// never raw.
func TestDeadLettersQuoteEscapes(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	script := filepath.Join(t.TempDir(), "escape.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '\\033[2J\\033]0;pwned\\007' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "JOB_HANDLER=exec", "JOB_COMMAND="+script, "JOB_MAX_ATTEMPTS=1", "JOB_ON_FAILURE=dead-letter")
	w := startWorker(t, "dl", env...)
	poll.Until(t, 10*time.Second, "leads", func() bool { return len(leaders(w)) == 1 })
	enqueueN(t, env, 1)
	var out strings.Builder
	poll.Until(t, 10*time.Second, "a dead letter", func() bool {
		out.Reset()
		if err := runCLI(t, []string{"deadletters"}, env, &out); err != nil {
			t.Fatalf("deadletters: %v\n%s", err, out.String())
		}
		return strings.Contains(out.String(), "exited with code 1")
	})
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Fatalf("deadletters wrote raw escape sequences:\n%q", out.String())
	}
	if !strings.Contains(out.String(), `\x1b[2J\x1b]0;pwned\a`) {
		t.Errorf("deadletters does not show the escapes quoted:\n%s", out.String())
	}
}
