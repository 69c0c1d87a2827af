package main

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// subcommands are the commands the top-level usage lists, read from it,
// so a command added there is held to the rules below.
func subcommands(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	if len(out) < 10 {
		t.Fatalf("found only %v in the usage", out)
	}
	return out
}

// TestEverySubcommandHelps: every subcommand answers -h and --help with
// its usage line and a paragraph, exit 0, before any configuration is
// read (an invalid LOCK_TTL does not matter), and without doing its work
// (healthcheck asks no replica). lockworker help CMD prints the same.
func TestEverySubcommandHelps(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	env := []string{"LOCK_TTL=abc", "REDIS_URLS=not a url", "PORT=" + strconv.Itoa(port)}
	for _, cmd := range subcommands(t) {
		var first string
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "--help"}, {"help", cmd}} {
			var out strings.Builder
			err := runCLI(t, args, env, &out)
			help := out.String()
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			if !strings.HasPrefix(help, "usage: lockworker "+cmd) {
				t.Errorf("%v does not start with its usage line:\n%s", args, help)
			}
			// A paragraph: a blank line after the usage, then some sentences.
			_, para, _ := strings.Cut(help, "\n\n")
			if len(para) < 150 || strings.Count(para, ". ")+strings.Count(para, ".\n") < 1 {
				t.Errorf("%v has no paragraph of help:\n%s", args, help)
			}
			if first == "" {
				first = help
			} else if help != first {
				t.Errorf("%v differs from %s -h:\n%s", args, cmd, help)
			}
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("healthcheck -h asked the replica %d times", n)
	}
}

// TestEveryFlagIsInTheHelp: each flag a subcommand accepts is explained in
// its help. The flags are found by trying them: an unknown one is refused
// by name.
func TestEveryFlagIsInTheHelp(t *testing.T) {
	flags := map[string][]string{
		"status": {"json"}, "partitions": {"json"}, "history": {"n", "json"}, "deadletters": {"n", "json"},
		"parked": {"json"}, "requeue": {"tail"}, "retry": {"key", "job"}, "skip": {"key", "job", "reason"},
		"enqueue": {"lines"}, "epoch": {"raise-to"}, "graph": {"format"}, "version": {"json"}, "demo": {"verbose"},
	}
	for _, cmd := range subcommands(t) {
		var out strings.Builder
		if err := runCLI(t, []string{cmd, "-h"}, nil, &out); err != nil {
			t.Fatal(err)
		}
		for _, f := range flags[cmd] {
			if !strings.Contains(out.String(), "--"+f) {
				t.Errorf("%s -h does not explain --%s:\n%s", cmd, f, out.String())
			}
		}
	}
}

// TestUsageErrorsAreOneLine: a bad command line exits 2 with one line
// that names the problem and points at -h, never the help itself.
func TestUsageErrorsAreOneLine(t *testing.T) {
	cases := [][]string{
		{"bogus"},
		{"enqueue", "--bogus", "x"},
		{"enqueue", "--lines", "x"},
		{"status", "extra"},
		{"history", "--n", "-1"},
		{"deadletters", "--n", "x"},
		{"requeue"},
		{"requeue", "--tail"},
		{"retry"},
		{"skip", "--reason", "x"},
		{"parked", "extra"},
		{"epoch", "--raise-to", "-5"},
		{"epoch", "7"},
		{"graph", "--format", "png"},
		{"stepdown", "now"},
		{"pause", "--bogus"},
		{"pause", "--partition", "-1"}, // -1 is no "all partitions"
		{"resume", "--partition", "-1"},
		{"stepdown", "--partition", "-1"},
		{"stepdown", "--token", "0"},
		{"stepdown", "--token", "x"},
		{"epoch", "--partition", "-2"},
		{"pause", "--partition", "x"},
		{"resume", "x"},
		{"healthcheck", "x"},
		{"version", "--bogus"},
		{"demo", "extra"},
		{"help", "a", "b"},
	}
	for _, cmd := range subcommands(t) {
		cases = append(cases, []string{cmd, "--no-such-flag"})
	}
	for _, args := range cases {
		var out strings.Builder
		err := runCLI(t, args, []string{"LOCK_TTL=abc"}, &out)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v; want exit code 2", args, err)
			continue
		}
		msg := err.Error()
		hint := "lockworker " + args[0] + " -h for help"
		if args[0] == "bogus" {
			hint = "lockworker -h lists the commands"
		}
		if strings.Contains(msg, "\n") || strings.Contains(msg, "usage:") || !strings.Contains(msg, hint) {
			t.Errorf("%v: %q; want one line with %q and no help", args, msg, hint)
		}
		if out.Len() != 0 {
			t.Errorf("%v printed %q", args, out.String())
		}
	}
}
