package main

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// doc reads a file of the repository (README.md, docs/NAME.md, ...).
func doc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsChartIsTheMachine: the Mermaid chart of docs/leadership.md is
// what `lockworker graph --format mermaid` prints, so the picture cannot
// drift.
func TestDocsChartIsTheMachine(t *testing.T) {
	const page = "docs/leadership.md"
	m := regexp.MustCompile("(?s)```mermaid\n(.*?)```").FindStringSubmatch(doc(t, page))
	if m == nil {
		t.Fatalf("%s has no mermaid block", page)
	}
	var out strings.Builder
	if err := runCLI(t, []string{"graph", "--format", "mermaid"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(m[1]) != strings.TrimSpace(out.String()) {
		t.Fatalf("the chart of %s differs from `lockworker graph --format mermaid`; paste this:\n%s", page, out.String())
	}
}

// TestReadmeListsEveryVariable: each variable the daemon reads has a row in
// the README's configuration table, and no row names one it does not read.
func TestReadmeListsEveryVariable(t *testing.T) {
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(doc(t, "README.md"), -1) {
		rows[m[1]] = true
	}
	typ := reflect.TypeFor[config.Config]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		if !rows[name] {
			t.Errorf("README configuration table lacks %s", name)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("README configuration table lists %s, which the daemon does not read", name)
	}
}

// TestACLUserFromDocs runs the least-privilege ACL user of
// docs/operations.md through everything lockworker does, on a fresh
// Redis: two replicas (the partition count recorded, the name claimed,
// acquire, renew, subscribe, the registry, the history), a job that fails
// into the dead-letter list, status, history, deadletters, requeue, pause,
// resume, the dashboard's snapshot, a step-down and a SIGTERM (release,
// publish); then a start after FLUSHALL under the running replica (the
// listeners counted). Redis must deny nothing.
func TestACLUserFromDocs(t *testing.T) {
	processTest(t)
	line := regexp.MustCompile(`(?m)^\s*(ACL SETUSER lockworker .*)$`).FindStringSubmatch(doc(t, "docs/operations.md"))
	if line == nil {
		t.Fatal("docs/operations.md has no ACL SETUSER lockworker line")
	}
	r := redistest.Start(t, redistest.Options{})
	admin := r.Client()
	var args []any
	for _, f := range strings.Fields(line[1]) {
		if f == ">CHANGE-ME" {
			f = ">s3cret"
		}
		args = append(args, f)
	}
	if err := admin.Do(t.Context(), args...).Err(); err != nil {
		t.Fatalf("%s: %v", line[1], err)
	}
	url := "redis://lockworker:s3cret@" + r.Addr()
	env := append(fastEnv(url), "JOB_HANDLER=exec", "JOB_COMMAND=false", "JOB_MAX_ATTEMPTS=1", "JOB_ON_FAILURE=dead-letter")
	a := startWorker(t, "acl-a", env...)
	poll.Until(t, 5*time.Second, "a leads", func() bool { return len(leaders(a)) == 1 })
	b := startWorker(t, "acl-b", env...)
	poll.Until(t, 5*time.Second, "b follows", func() bool {
		s, ok := b.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	enqueueN(t, env, 1)
	if err := run(t.Context(), []string{"enqueue", "--lines"}, config.Getenv(env), strings.NewReader("x\ny\n"), &strings.Builder{}, &strings.Builder{}); err != nil {
		t.Fatalf("enqueue --lines: %v", err) // one script
	}
	// Later and every: a delayed, idempotent job of a key that has jobs
	// (paused, they wait: it joins their list), and a schedule that ticks.
	for _, cmd := range [][]string{{"pause"}, {"enqueue", "--key", "k", "first"},
		{"enqueue", "--key", "k", "--in", "300ms", "--idempotency-key", "i", "x"},
		{"enqueue", "--key", "k", "--idempotency-key", "i", "x"}, {"delayed"}, {"schedule", "add", "beat", "--every", "1s", "x"}} {
		if err := runCLI(t, cmd, env, &strings.Builder{}); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	poll.Until(t, 10*time.Second, "the delayed job moved and the schedule ticked", func() bool {
		var out strings.Builder
		if err := runCLI(t, []string{"status", "--json"}, env, &out); err != nil {
			t.Fatalf("status: %v\n%s", err, out.String())
		}
		var r statusReport
		return json.Unmarshal([]byte(out.String()), &r) == nil && r.Delayed == 0 && len(r.Schedules) == 1 && !r.Schedules[0].LastTick.IsZero()
	})
	for _, cmd := range [][]string{{"resume"}, {"schedule", "list"}, {"schedule", "remove", "beat"}} {
		if err := runCLI(t, cmd, env, &strings.Builder{}); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	var id string
	poll.Until(t, 10*time.Second, "a dead letter", func() bool {
		var out strings.Builder
		if err := runCLI(t, []string{"deadletters"}, env, &out); err != nil {
			t.Fatalf("deadletters: %v\n%s", err, out.String())
		}
		if m := regexp.MustCompile(`(?m)^([0-9A-Z]{26}) `).FindStringSubmatch(out.String()); m != nil {
			id = m[1]
		}
		return id != ""
	})
	for _, cmd := range [][]string{{"requeue", id}, {"status"}, {"history"}, {"pause"}, {"resume"}} {
		var out strings.Builder
		if err := runCLI(t, cmd, env, &out); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out.String())
		}
	}
	if snap := get(t, a.url("/api/snapshot")); !strings.Contains(snap, `"replicas"`) {
		t.Fatalf("the dashboard's snapshot as the ACL user: %s", snap)
	}
	var out strings.Builder
	if err := runCLI(t, []string{"stepdown"}, env, &out); err != nil {
		t.Fatalf("stepdown: %v\n%s", err, out.String())
	}
	poll.Until(t, 5*time.Second, "b leads after the step-down", func() bool { return len(leaders(b)) == 1 })
	a.signal(syscall.SIGTERM)
	if err, ok := a.exited(5 * time.Second); !ok || err != nil {
		t.Fatalf("a after SIGTERM: exited=%v err=%v", ok, err)
	}
	poll.Until(t, 5*time.Second, "b leads", func() bool { return len(leaders(b)) == 1 })
	if !strings.Contains(a.out.String(), "Releasing lock") {
		t.Fatal("a did not release")
	}
	if err := admin.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	c := startWorker(t, "acl-c", env...)
	poll.Until(t, 10*time.Second, "c leads or follows after the flush", func() bool {
		s, ok := c.status()
		return ok && (s.State == "waiting_to_acquire_lock" || s.Leader)
	})

	entries, err := admin.Do(t.Context(), "ACL", "LOG").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Fatalf("Redis denied the ACL user of docs/operations.md %d time(s): %v", len(entries), entries)
	}
	for _, w := range []*worker{a, b, c} {
		if strings.Contains(w.out.String(), "NOPERM") {
			t.Fatalf("%s hit NOPERM:\n%s", w.name, w.out.String())
		}
	}
}

// TestDemoDurationSaidOnce: the README and `lockworker demo -h` give the
// demo's duration as one number (docs/performance.md#the-demo has the
// measurements behind it).
func TestDemoDurationSaidOnce(t *testing.T) {
	row := regexp.MustCompile("(?m)^\\| `make demo` \\|.*\\| about (\\d+) s once built").FindStringSubmatch(doc(t, "README.md"))
	help := regexp.MustCompile(`takes about (\d+) seconds`).FindAllStringSubmatch(demoUsage, -1)
	parts := regexp.MustCompile(`\(about (\d+) seconds`).FindStringSubmatch(demoUsage)
	if row == nil || len(help) != 1 || parts == nil {
		t.Fatalf("README's make demo row %q, demo -h %q, %q: each must say how long the demo takes", row, help, parts)
	}
	if row[1] != help[0][1] || row[1] != parts[1] {
		t.Fatalf("the README says the demo takes about %s s, demo -h about %s s (partitions: %s s)", row[1], help[0][1], parts[1])
	}
	if !strings.Contains(doc(t, "docs/performance.md"), "## The demo") {
		t.Fatal("docs/performance.md has no measurement of the demo")
	}
}

// TestReadmeCommandsNameEveryFlag: every flag a subcommand's -h explains
// is named in the README's command table, on that command's rows.
func TestReadmeCommandsNameEveryFlag(t *testing.T) {
	readme := doc(t, "README.md")
	for _, cmd := range subcommands(t) {
		var help strings.Builder
		if err := runCLI(t, []string{cmd, "-h"}, nil, &help); err != nil {
			t.Fatal(err)
		}
		var rows strings.Builder
		for _, m := range regexp.MustCompile("(?m)^\\| [^|]*`lockworker "+cmd+"\\b.*$").FindAllString(readme, -1) {
			rows.WriteString(m)
		}
		if rows.Len() == 0 {
			t.Errorf("the README's command table has no row for lockworker %s", cmd)
			continue
		}
		for _, m := range regexp.MustCompile(`(?m)^\s+(--[a-z-]+)`).FindAllStringSubmatch(help.String(), -1) {
			if !strings.Contains(rows.String(), m[1]) {
				t.Errorf("the README's row for lockworker %s does not name %s", cmd, m[1])
			}
		}
	}
}

// TestQueueDocListsEveryExecVariable: docs/queue.md names every
// LOCKWORKER_ variable the exec handler gives a job's command.
func TestQueueDocListsEveryExecVariable(t *testing.T) {
	vars := regexp.MustCompile(`"(LOCKWORKER_[A-Z_]+)"`).FindAllStringSubmatch(doc(t, "internal/jobs/exechandler.go"), -1)
	if len(vars) < 6 {
		t.Fatalf("found only %v in the exec handler", vars)
	}
	queue := doc(t, "docs/queue.md")
	for _, v := range vars {
		if !strings.Contains(queue, "| `"+v[1]+"` |") {
			t.Errorf("docs/queue.md's table of the exec handler's variables lacks %s", v[1])
		}
	}
}
