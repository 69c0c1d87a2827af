package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestEnqueueArguments: -h helps and enqueues nothing, -- lets a payload
// start with a dash, and every payload is held to 1 byte .. 1 MiB, from
// arguments or stdin.
func TestEnqueueArguments(t *testing.T) {
	processTest(t)
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
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	q, err := jobs.New(jobs.Config{Client: r.Client(), Keys: keys(t).Lease()})
	if err != nil {
		t.Fatal(err)
	}
	queue := func() (ids, payloads []string) {
		t.Helper()
		all, err := q.Unfinished(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range all {
			ids, payloads = append(ids, j.ID), append(payloads, string(j.Payload))
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

// TestBulkEnqueueProcessed: a replica's POST /jobs with NDJSON and
// `enqueue --lines` feed the same queue, and the leader runs every job once,
// in line order, batch after batch; a refused batch leaves no job.
func TestBulkEnqueueProcessed(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	effects := filepath.Join(t.TempDir(), "effects")
	script := filepath.Join(t.TempDir(), "effect.sh")
	body := "#!/bin/sh\necho \"$(cat) $LOCKWORKER_JOB_ID\" >> " + effects + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "JOBS_TOKEN="+testJobsToken, "JOB_HANDLER=exec", "JOB_COMMAND="+script)
	w := startWorker(t, "bulk", env...)
	poll.Until(t, 10*time.Second, "the replica leads", func() bool { return len(leaders(w)) == 1 })

	post := func(body string) (int, []string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url("/jobs"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testJobsToken)
		req.Header.Set("Content-Type", "application/x-ndjson")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans struct{ IDs []string }
		_ = json.NewDecoder(res.Body).Decode(&ans)
		return res.StatusCode, ans.IDs
	}
	var want []string // "payload id", in the order the leader must run them
	batch := func(from, to int) (string, []string) {
		var b strings.Builder
		var payloads []string
		for i := from; i < to; i++ {
			payloads = append(payloads, fmt.Sprintf(`{"n":%d}`, i))
			fmt.Fprintln(&b, payloads[len(payloads)-1])
		}
		return b.String(), payloads
	}
	expect := func(payloads, ids []string) {
		t.Helper()
		if len(ids) != len(payloads) {
			t.Fatalf("%d IDs for %d jobs", len(ids), len(payloads))
		}
		for i := range ids {
			want = append(want, payloads[i]+" "+ids[i])
		}
	}

	in, payloads := batch(0, 20)
	code, ids := post(in)
	if code != http.StatusAccepted {
		t.Fatalf("POST /jobs: %d", code)
	}
	expect(payloads, ids)
	if code, _ := post("{\"n\":-1}\n{\"n\":\n"); code != http.StatusBadRequest {
		t.Fatalf("POST /jobs with a broken line: %d, want 400", code)
	}
	in, payloads = batch(20, 40)
	var out strings.Builder
	if err := run(t.Context(), []string{"enqueue", "--lines"}, config.Getenv(env), strings.NewReader(in), &out, &out); err != nil {
		t.Fatalf("enqueue --lines: %v\n%s", err, out.String())
	}
	expect(payloads, strings.Fields(out.String()))
	in, payloads = batch(40, 45)
	code, ids = post(in)
	if code != http.StatusAccepted {
		t.Fatalf("POST /jobs: %d", code)
	}
	expect(payloads, ids)

	waitCommitted(t, env, int64(len(want)))
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	// At-least-once: a job whose leader lost its lease (a loaded machine)
	// runs again; only its first run has to be in order.
	var got []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSuffix(line, "\n"); !slices.Contains(got, line) {
			got = append(got, line)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the leader ran\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEnqueueNotAcknowledgedNamesTheSetting: on a Cluster without
// replicas (REDIS_MIN_REPLICAS 1 by default there) an enqueue is written
// but never acknowledged; the command says so naming REDIS_MIN_REPLICAS
// and the ways out, for one job and for --lines (whose jobs are in the
// queue too: not "nothing enqueued").
func TestEnqueueNotAcknowledgedNamesTheSetting(t *testing.T) {
	processTest(t)
	c := redistest.StartCluster(t, fleet.ClusterSpec{ReplicasPerMaster: -1})
	env := append(fastEnv(""), "REDIS_MODE=cluster", "REDIS_URLS="+strings.Join(c.URLs(), ","))
	for _, tc := range []struct {
		args  []string
		stdin string
		what  string
	}{
		{[]string{"enqueue", "x"}, "", "it is in the queue"},
		{[]string{"enqueue", "--lines"}, "a\nb\n", "it is in the queue"},
	} {
		err := run(t.Context(), tc.args, config.Getenv(env), strings.NewReader(tc.stdin), &strings.Builder{}, &strings.Builder{})
		if err == nil || exitCode(err) != 1 {
			t.Fatalf("%v on a Cluster without replicas: %v; want exit 1", tc.args, err)
		}
		for _, want := range []string{"not acknowledged", tc.what, "REDIS_MIN_REPLICAS", "give the master a replica", "REDIS_MIN_REPLICAS=0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %q lacks %q", tc.args, err, want)
			}
		}
		if strings.Contains(err.Error(), "nothing enqueued") {
			t.Errorf("%v: %q says nothing was enqueued", tc.args, err)
		}
	}
	if s := queueStatus(t, env); s.Pending != 3 {
		t.Errorf("%d jobs pending, want the 3 written", s.Pending)
	}
}

// TestKeysRefusedEverywhere: one rule for an ordering key, from the
// binary, on the command line (--key, --key-field) and over HTTP
// (Lockworker-Key, Lockworker-Key-Field): a key given empty or blank
// (--key "$CUSTOMER" with the variable unset), or with a tab in it, is
// refused with a message naming the key (exit 2, 400), and nothing is
// enqueued; the same key left out enqueues a job without one.
func TestKeysRefusedEverywhere(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "JOBS_TOKEN="+testJobsToken)
	q, err := jobs.New(jobs.Config{Client: r.Client(), Keys: keys(t).Lease()})
	if err != nil {
		t.Fatal(err)
	}
	queued := func() int64 {
		t.Helper()
		st, err := q.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.Pending
	}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"enqueue", "--key", "", "x"}, "", `enqueue: --key "": ordering key empty or only spaces`},
		{[]string{"enqueue", "--key", "  ", "x"}, "", `enqueue: --key "  ": ordering key empty or only spaces`},
		{[]string{"enqueue", "--key=", "x"}, "", `enqueue: --key "": ordering key empty or only spaces`},
		{[]string{"enqueue", "--key", "a\tb", "x"}, "", `enqueue: --key "a\tb": ordering key with a control character`},
		{[]string{"enqueue", "--lines", "--key", ""}, "1\n", `enqueue: --key "": ordering key empty or only spaces`},
		{[]string{"enqueue", "--lines", "--key-field", "c"}, "{\"c\":\"k\"}\n{\"c\":\" \"}\n",
			`enqueue: job 2: key field "c": ordering key empty or only spaces; nothing enqueued`},
		{[]string{"enqueue", "--lines", "--key-field", "c"}, "{\"c\":\"a\\tb\"}\n",
			`enqueue: job 1: key field "c": ordering key with a control character; nothing enqueued`},
	} {
		cmd := exec.Command(binary, tc.args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(tc.stdin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "lockworker: "+tc.want) {
			t.Errorf("%q: %v\n%s\nwant exit 2 and %q", tc.args, err, out, tc.want)
		}
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d jobs enqueued by refused commands", n)
	}

	w := startWorker(t, "keys", env...)
	poll.Until(t, 10*time.Second, "the replica answers", func() bool { _, ok := w.status(); return ok })
	post := func(contentType, body string, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url("/jobs"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		req.Header.Set("Authorization", "Bearer "+testJobsToken)
		req.Header.Set("Content-Type", contentType)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans struct{ Error string }
		_ = json.NewDecoder(res.Body).Decode(&ans)
		return res.StatusCode, ans.Error
	}
	for _, tc := range []struct {
		header http.Header
		want   string
	}{
		{http.Header{"Lockworker-Key": {"a\tb"}}, "Lockworker-Key: ordering key with a control character"},
		{http.Header{"Lockworker-Key": {""}}, "Lockworker-Key: ordering key empty or only spaces"},
		{http.Header{"Lockworker-Key": {"   "}}, "Lockworker-Key: ordering key empty or only spaces"},
	} {
		for _, ct := range []string{"text/plain", "application/x-ndjson"} {
			if code, msg := post(ct, "1\n", tc.header); code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("POST /jobs (%s) with %q: %d %q; want 400 and %q", ct, tc.header, code, msg, tc.want)
			}
		}
	}
	code, msg := post("application/x-ndjson", "{\"c\":\"k\"}\n{\"c\":\"a\\tb\"}\n", http.Header{"Lockworker-Key-Field": {"c"}})
	if want := `job 2: key field "c": ordering key with a control character`; code != http.StatusBadRequest || !strings.Contains(msg, want) {
		t.Errorf("POST /jobs with a tab in a line's key: %d %q; want 400 and %q", code, msg, want)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d jobs enqueued by refused requests", n)
	}
	if code, msg := post("text/plain", "x", http.Header{}); code != http.StatusAccepted {
		t.Fatalf("POST /jobs without a key: %d %q", code, msg)
	}
	if err := runCLI(t, []string{"enqueue", "y"}, env, &strings.Builder{}); err != nil {
		t.Fatalf("enqueue without --key: %v", err)
	}
}
