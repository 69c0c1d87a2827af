package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// cli runs lockworker args with env and returns its output; a failure
// fails the test.
func cli(t *testing.T, env []string, args ...string) string {
	t.Helper()
	var out strings.Builder
	if err := run(t.Context(), args, config.Getenv(env), strings.NewReader(""), &out, &out); err != nil {
		t.Fatalf("lockworker %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// effectLines reads the exec command's effects file: one line per run.
func effectLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " "))
}

// TestLaterAndEvery: from the binary, a job enqueued with --in waits in
// `lockworker delayed` (and `partitions` counts it) and runs once due,
// its command seeing LOCKWORKER_DUE_AT; a schedule added with `schedule
// add` ticks once per second, each tick's command seeing
// LOCKWORKER_SCHEDULE and LOCKWORKER_SCHEDULED_AT, `status` shows its last
// and next tick, and `schedule remove` stops it.
func TestLaterAndEvery(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	effects := filepath.Join(t.TempDir(), "effects")
	script := filepath.Join(t.TempDir(), "effect.sh")
	body := "#!/bin/sh\necho \"$LOCKWORKER_JOB_ID|$LOCKWORKER_DUE_AT|$LOCKWORKER_SCHEDULE|$LOCKWORKER_SCHEDULED_AT\" >> " + effects + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "JOB_HANDLER=exec", "JOB_COMMAND="+script)

	id := strings.TrimSpace(cli(t, env, "enqueue", "--in", "2s", "--key", "k", "later"))
	var delayed []jobs.DelayedJob
	if err := json.Unmarshal([]byte(cli(t, env, "delayed", "--json")), &delayed); err != nil {
		t.Fatal(err)
	}
	if len(delayed) != 1 || delayed[0].ID != id || delayed[0].Key != "k" || delayed[0].DueAt.IsZero() {
		t.Fatalf("delayed --json = %+v, want job %s of key k", delayed, id)
	}
	if text := cli(t, env, "delayed"); !strings.Contains(text, id) || !strings.Contains(text, "DUE AT") {
		t.Fatalf("delayed:\n%s", text)
	}
	var parts []figures.Partition
	if err := json.Unmarshal([]byte(cli(t, env, "partitions", "--json")), &parts); err != nil || len(parts) != 1 || parts[0].Delayed != 1 {
		t.Fatalf("partitions --json = %+v, %v; want 1 delayed", parts, err)
	}
	if out := cli(t, env, "schedule", "add", "beat", "--every", "1s", "--key", "s", "tick"); !strings.Contains(out, "next tick") {
		t.Fatalf("schedule add: %s", out)
	}
	var list []figures.Schedule
	if err := json.Unmarshal([]byte(cli(t, env, "schedule", "list", "--json")), &list); err != nil || len(list) != 1 ||
		list[0].Name != "beat" || list[0].Every != "1s" || list[0].Key != "s" || list[0].NextTick.IsZero() {
		t.Fatalf("schedule list --json = %+v, %v", list, err)
	}

	startWorker(t, "later", env...)
	poll.Until(t, 30*time.Second, "the delayed job and three ticks run", func() bool {
		lines := effectLines(t, effects)
		ticks, later := 0, false
		for _, l := range lines {
			later = later || strings.HasPrefix(l, id+"|")
			if strings.Contains(l, "|beat|") {
				ticks++
			}
		}
		return later && ticks >= 3
	})
	seen := map[string]bool{}
	for _, l := range effectLines(t, effects) {
		f := strings.Split(l, "|")
		switch {
		case f[0] == id:
			if f[1] != jobs.FormatTime(delayed[0].DueAt) || f[2] != "" {
				t.Errorf("the delayed job saw %q, want LOCKWORKER_DUE_AT=%s and no schedule", l, jobs.FormatTime(delayed[0].DueAt))
			}
		case f[2] == "beat":
			if f[3] == "" || f[1] != f[3] || !strings.HasSuffix(f[3], ".000Z") || seen[f[3]] {
				t.Errorf("a tick saw %q: want LOCKWORKER_SCHEDULED_AT on a whole second, once", l)
			}
			seen[f[3]] = true
		}
	}
	var st statusReport
	if err := json.Unmarshal([]byte(cli(t, env, "status", "--json")), &st); err != nil || len(st.Schedules) != 1 ||
		st.Schedules[0].LastTick.IsZero() || !st.Schedules[0].NextTick.After(st.Schedules[0].LastTick) {
		t.Fatalf("status --json schedules = %+v, %v; want the last and next tick", st.Schedules, err)
	}
	if text := cli(t, env, "status"); !strings.Contains(text, "schedules (1)") || !strings.Contains(text, "every 1s") {
		t.Fatalf("status:\n%s", text)
	}
	if out := cli(t, env, "schedule", "remove", "beat"); !strings.Contains(out, "removed") {
		t.Fatalf("schedule remove: %s", out)
	}
	var out strings.Builder
	err := run(t.Context(), []string{"schedule", "remove", "beat"}, config.Getenv(env), strings.NewReader(""), &out, &out)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "no schedule is named beat") {
		t.Fatalf("removing it again: %v (exit %d)", err, exitCode(err))
	}
	if text := cli(t, env, "schedule", "list"); !strings.Contains(text, "no schedules") {
		t.Fatalf("schedule list after remove:\n%s", text)
	}
}

// TestEnqueueOnce: the same enqueue with one --idempotency-key prints
// one ID and adds one job, and so do two lines with one key in
// --idempotency-key-field; over HTTP, Idempotency-Key answers 202 then
// 200 with that ID, and Lockworker-Not-Before delays a job.
func TestEnqueueOnce(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "JOBS_TOKEN="+testJobsToken)
	first := strings.TrimSpace(cli(t, env, "enqueue", "--idempotency-key", "order-17", "--key", "acct", "pay"))
	second := strings.TrimSpace(cli(t, env, "enqueue", "--idempotency-key", "order-17", "--key", "acct", "pay"))
	if first == "" || second != first {
		t.Fatalf("two enqueues with one idempotency key printed %q and %q", first, second)
	}
	var out strings.Builder
	in := strings.NewReader(`{"op":"a"}` + "\n" + `{"op":"a"}` + "\n" + `{"op":"b"}` + "\n")
	if err := run(t.Context(), []string{"enqueue", "--lines", "--idempotency-key-field", "op"}, config.Getenv(env), in, &out, &out); err != nil {
		t.Fatal(err, out.String())
	}
	if ids := strings.Fields(out.String()); len(ids) != 3 || ids[1] != ids[0] || ids[2] == ids[0] {
		t.Fatalf("enqueue --lines with one idempotency key on two lines printed %v, want the first ID twice", ids)
	}
	w := startWorker(t, "once", env...)
	poll.Until(t, 10*time.Second, "the replica answers", func() bool { _, ok := w.status(); return ok })
	post := func(h map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url("/jobs"), strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer "+testJobsToken)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans struct{ ID string }
		_ = json.NewDecoder(res.Body).Decode(&ans)
		return res.StatusCode, ans.ID
	}
	code1, id1 := post(map[string]string{"Idempotency-Key": "http-1"})
	code2, id2 := post(map[string]string{"Idempotency-Key": "http-1"})
	if code1 != http.StatusAccepted || code2 != http.StatusOK || id1 == "" || id2 != id1 {
		t.Fatalf("POST /jobs twice with one Idempotency-Key: %d %s, then %d %s; want 202, then 200 with the same ID", code1, id1, code2, id2)
	}
	code, later := post(map[string]string{"Lockworker-Not-Before": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if code != http.StatusAccepted {
		t.Fatalf("POST /jobs with Lockworker-Not-Before: %d", code)
	}
	var delayed []jobs.DelayedJob
	if err := json.Unmarshal([]byte(cli(t, env, "delayed", "--json")), &delayed); err != nil || len(delayed) != 1 || delayed[0].ID != later {
		t.Fatalf("delayed --json = %+v, %v; want %s", delayed, err, later)
	}
}

// TestTimeFlagsRefused: bad --in, --at, --idempotency-key, schedule
// flags are usage errors (exit 2) before Redis is dialled.
func TestTimeFlagsRefused(t *testing.T) {
	env := fastEnv("redis://127.0.0.1:1") // nothing listens: a dial would fail with exit 1
	for _, args := range [][]string{
		{"enqueue", "--in", "-5s", "x"},
		{"enqueue", "--in", "1s", "--at", "2030-01-01T00:00:00Z", "x"},
		{"enqueue", "--at", "tomorrow", "x"},
		{"enqueue", "--in", "9000h", "x"},
		{"enqueue", "--idempotency-key", "a b", "x"},
		{"enqueue", "--idempotency-key", "", "x"},
		{"enqueue", "--lines", "--idempotency-key", "k"},
		{"enqueue", "--at-field", "at", "x"},
		{"enqueue", "--lines", "--at", "2030-01-01T00:00:00Z", "--at-field", "at"},
		{"schedule", "add", "n", "x"},
		{"schedule", "add", "n", "--every", "1m", "--cron", "* * * * *", "x"},
		{"schedule", "add", "n", "--every", "1m", "--tz", "UTC", "x"},
		{"schedule", "add", "n", "--every", "1m", "--catch-up", "all", "x"},
		{"schedule", "add", "n", "--every", "10ms", "x"},
		{"schedule", "add", "n", "--cron", "61 * * * *", "x"},
		{"schedule", "add", "bad name!", "--every", "1m", "x"},
		{"schedule", "remove"},
		{"schedule", "frobnicate"},
	} {
		var out strings.Builder
		err := run(t.Context(), args, config.Getenv(env), strings.NewReader(""), &out, &out)
		if exitCode(err) != 2 {
			t.Errorf("lockworker %s: %v (exit %d), want a usage error (exit 2)", strings.Join(args, " "), err, exitCode(err))
		}
	}
}
