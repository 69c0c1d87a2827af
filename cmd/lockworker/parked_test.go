package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// lease is a leadership the test holds for an in-process worker.
type lease struct{ token int64 }

func (l lease) Token() int64        { return l.token }
func (l lease) Deadline() time.Time { return time.Now().Add(time.Minute) }
func (l lease) Valid() bool         { return true }

// TestParkedRetrySkip: a key parked by a job that failed for good is
// listed by parked (text and JSON) and counted by partitions, beside a
// key in flight; skip moves its job to the dead
// letters with who and why, which deadletters shows with the key and
// partition, and history as a SKIPPED row (text and JSON); requeue --tail puts it back; retry of a key not parked is
// an error.
func TestParkedRetrySkip(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := fastEnv(r.URL())
	for _, payload := range []string{"bad", "next"} {
		if err := runCLI(t, []string{"enqueue", "--key", "acct-1", payload}, env, &strings.Builder{}); err != nil {
			t.Fatal(err)
		}
	}
	q, err := jobs.New(jobs.Config{Client: r.Client(), Keys: keys(t).Lease()})
	if err != nil {
		t.Fatal(err)
	}
	if err := runCLI(t, []string{"enqueue", "--key", "acct-2", "slow"}, env, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	w, err := jobs.NewWorker(jobs.WorkerConfig{Queue: q, MaxAttempts: 1, Handler: jobs.HandlerFunc(func(ctx context.Context, j jobs.Job, _ jobs.Lease) error {
		switch string(j.Payload) {
		case "bad":
			return errors.New("bad data")
		case "slow": // in flight until the partitions are read
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Process(ctx, lease{token: 1}) }()
	poll.Until(t, 10*time.Second, "acct-1 parked, acct-2 in flight", func() bool {
		s, err := q.Stats(t.Context())
		return err == nil && s.Parked == 1 && s.InFlight == 1
	})
	var parts strings.Builder
	if err := runCLI(t, []string{"partitions", "--json"}, env, &parts); err != nil {
		t.Fatalf("partitions --json: %v\n%s", err, parts.String())
	}
	var table []struct {
		InFlight int `json:"inFlight"`
		Parked   int `json:"parked"`
	}
	if err := json.Unmarshal([]byte(parts.String()), &table); err != nil || len(table) != 1 || table[0].InFlight != 1 || table[0].Parked != 1 {
		t.Fatalf("partitions --json: %v\n%s; want 1 key in flight and 1 parked", err, parts.String())
	}
	parts.Reset()
	if err := runCLI(t, []string{"partitions"}, env, &parts); err != nil || !regexp.MustCompile(`IN FLIGHT +PARKED`).MatchString(parts.String()) {
		t.Fatalf("partitions: %v\n%s", err, parts.String())
	}
	close(release)
	poll.Until(t, 10*time.Second, "acct-2 done", func() bool {
		s, err := q.Stats(t.Context())
		return err == nil && s.InFlight == 0 && s.Committed == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	if err := runCLI(t, []string{"parked", "--json"}, env, &out); err != nil {
		t.Fatalf("parked --json: %v\n%s", err, out.String())
	}
	var parked []struct {
		Key       string `json:"key"`
		Partition int    `json:"partition"`
		Held      int    `json:"held"`
		JobID     string `json:"jobId"`
		Attempts  int    `json:"attempts"`
		Error     string `json:"error"`
		ParkedAt  string `json:"parkedAt"`
	}
	if err := json.Unmarshal([]byte(out.String()), &parked); err != nil || len(parked) != 1 {
		t.Fatalf("parked --json: %v\n%s", err, out.String())
	}
	p := parked[0]
	if p.Key != "acct-1" || p.Partition != 0 || p.Held != 2 || p.JobID == "" || p.Attempts != 1 || p.Error != "bad data" || p.ParkedAt == "" {
		t.Fatalf("parked %+v", p)
	}
	out.Reset()
	if err := runCLI(t, []string{"parked"}, env, &out); err != nil || !strings.Contains(out.String(), "acct-1") ||
		!strings.Contains(out.String(), p.JobID) {
		t.Fatalf("parked: %v\n%s", err, out.String())
	}

	out.Reset()
	if err := runCLI(t, []string{"skip", "--key", "acct-1", "--reason", "bad data upstream"}, env, &out); err != nil ||
		!strings.Contains(out.String(), p.JobID) {
		t.Fatalf("skip: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runCLI(t, []string{"deadletters", "--json"}, env, &out); err != nil {
		t.Fatalf("deadletters --json: %v\n%s", err, out.String())
	}
	var dead []deadLetterReport
	if err := json.Unmarshal([]byte(out.String()), &dead); err != nil || len(dead) != 1 {
		t.Fatalf("deadletters --json: %v\n%s", err, out.String())
	}
	if d := dead[0]; d.ID != p.JobID || d.Key != "acct-1" || d.Partition != 0 || !strings.Contains(d.SkippedBy, "lockworker skip") ||
		d.Reason != "bad data upstream" || d.Error != "bad data" || d.Payload != "bad" {
		t.Fatalf("dead letter %+v", d)
	}
	out.Reset()
	if err := runCLI(t, []string{"deadletters"}, env, &out); err != nil || !strings.Contains(out.String(), "KEY") ||
		!strings.Contains(out.String(), "skipped by") {
		t.Fatalf("deadletters: %v\n%s", err, out.String())
	}
	var skipped *historyReport
	for _, h := range historyOf(t, env) {
		if h.Event == "skipped" {
			skipped = &h
		}
	}
	if skipped == nil || skipped.JobID != p.JobID || skipped.Key == nil || *skipped.Key != "acct-1" || skipped.Partition != 0 ||
		!strings.HasPrefix(skipped.By, "lockworker skip (") || skipped.Reason != "bad data upstream" || skipped.At == nil ||
		time.Since(*skipped.At) > time.Minute {
		t.Fatalf("history --json holds no skip with who, when, why: %+v", skipped)
	}
	out.Reset()
	if err := runCLI(t, []string{"history"}, env, &out); err != nil || !strings.Contains(out.String(), "SKIPPED") ||
		!strings.Contains(out.String(), "bad data upstream") || !strings.Contains(out.String(), "key acct-1 (partition 0), job "+p.JobID) {
		t.Fatalf("history: %v\n%s", err, out.String())
	}
	if s, err := q.Stats(t.Context()); err != nil || s.Parked != 0 || s.Pending != 1 {
		t.Fatalf("after skip: %+v, %v; want the held job released, nothing parked", s, err)
	}

	out.Reset()
	if err := runCLI(t, []string{"requeue", "--tail", p.JobID}, env, &out); err != nil || !strings.Contains(out.String(), p.JobID+" -> ") {
		t.Fatalf("requeue --tail: %v\n%s", err, out.String())
	}
	jobsLeft, err := q.Unfinished(t.Context())
	if err != nil || len(jobsLeft) != 2 || string(jobsLeft[0].Payload) != "next" || string(jobsLeft[1].Payload) != "bad" {
		t.Fatalf("after requeue --tail: %+v, %v; want next, then the requeued job", jobsLeft, err)
	}
	err = runCLI(t, []string{"retry", "--key", "acct-1"}, env, &strings.Builder{})
	if exitCode(err) != 1 || !errors.Is(err, jobs.ErrNotParked) {
		t.Fatalf("retry of a key not parked: %v (exit %d), want ErrNotParked, exit 1", err, exitCode(err))
	}
}
