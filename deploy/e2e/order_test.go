package main

import (
	"strings"
	"testing"
	"time"
)

func TestCheckOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := []string{"J1", "J2", "J3", "J4"}
	d := func(ms int, worker, job string, token, attempt int64) delivery {
		return delivery{at: t0.Add(time.Duration(ms) * time.Millisecond), worker: worker, jobID: job, token: token, attempt: attempt}
	}
	// J2 was in flight when A stopped; B ran it again. J3 likewise when B
	// was killed. Given out of time order, as per-container logs are.
	good := []delivery{
		d(0, "A", "J1", 1, 1), d(10, "A", "J2", 1, 1),
		d(30, "C", "J3", 3, 2), d(40, "C", "J4", 3, 1),
		d(20, "B", "J2", 2, 2), d(25, "B", "J3", 2, 1),
	}
	r, err := checkOrder(jobs, good)
	if err != nil {
		t.Fatal(err)
	}
	if r.jobs != 4 || r.deliveries != 6 || tokens(r.tokens) != "1 → 2 → 3" {
		t.Errorf("report %+v, want 4 jobs, 6 deliveries, tokens 1 → 2 → 3", r)
	}
	if err := redelivered(jobs, []int{2, 3}, good); err != nil {
		t.Errorf("redelivered: %v", err)
	}
	if err := redelivered(jobs, []int{4}, good); err == nil {
		t.Error("redelivered: job 4 ran once only, want an error")
	}

	for _, tc := range []struct {
		name string
		ds   []delivery
		want string
	}{
		{"swapped", []delivery{d(0, "A", "J2", 1, 1), d(10, "A", "J1", 1, 1)}, "before job 1"},
		{"back to an earlier job", []delivery{d(0, "A", "J1", 1, 1), d(10, "A", "J2", 1, 1), d(20, "B", "J1", 2, 2)}, "after job 2"},
		{"skipped", []delivery{d(0, "A", "J1", 1, 1), d(10, "A", "J3", 1, 1)}, "before job 2"},
		{"never delivered", []delivery{d(0, "A", "J1", 1, 1), d(10, "A", "J2", 1, 1), d(20, "A", "J3", 1, 1)}, "job 4 of 4"},
		{"token down", []delivery{d(0, "A", "J1", 2, 1), d(10, "B", "J2", 1, 1)}, "token 1 after token 2"},
		{"unknown job", []delivery{d(0, "A", "J1", 1, 1), d(10, "A", "X", 1, 1)}, "did not enqueue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkOrder(jobs, tc.ds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkOrder = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestDeliveries(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := slogLine(t, at, "Doing some heavy work...", "workerId", "A", "jobId", "J1", "token", 7, "attempt", 2) +
		slogLine(t, at, "Work done", "workerId", "A", "jobId", "J1", "token", 7)
	lines, err := parseLog(out)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := deliveries("A", lines)
	if err != nil {
		t.Fatal(err)
	}
	want := delivery{at: at, worker: "A", jobID: "J1", token: 7, attempt: 2}
	if len(ds) != 1 || ds[0] != want {
		t.Errorf("deliveries = %+v, want [%+v]", ds, want)
	}
	bad, _ := parseLog(slogLine(t, at, "Doing some heavy work...", "workerId", "A", "jobId", "J1", "token", "x", "attempt", 1))
	if _, err := deliveries("A", bad); err == nil {
		t.Error("a delivery with a token that is no number: want an error")
	}
}
