package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/roster"
)

// fakeSource is a Source whose snapshot a test changes; each change sends
// a notice, as the daemon's source will.
type fakeSource struct {
	mu      sync.Mutex
	snap    Snapshot
	err     error
	reads   int
	changes chan struct{}
}

var _ Source = (*fakeSource)(nil)

func newFakeSource(s Snapshot) *fakeSource {
	return &fakeSource{snap: s, changes: make(chan struct{}, 1)}
}

// Snapshot returns a deep copy, so a later set cannot race the encoder.
func (f *fakeSource) Snapshot(context.Context) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return Snapshot{}, f.err
	}
	b, err := json.Marshal(f.snap)
	if err != nil {
		return Snapshot{}, err
	}
	var out Snapshot
	return out, json.Unmarshal(b, &out)
}

func (f *fakeSource) Changes() <-chan struct{} { return f.changes }

// set changes the snapshot and sends a notice.
func (f *fakeSource) set(change func(*Snapshot)) {
	f.mu.Lock()
	change(&f.snap)
	f.mu.Unlock()
	f.notify()
}

func (f *fakeSource) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	f.notify()
}

func (f *fakeSource) notify() {
	select {
	case f.changes <- struct{}{}:
	default:
	}
}

func (f *fakeSource) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// fakeActions records each call and reports it on called.
type fakeActions struct {
	mu     sync.Mutex
	log    []string
	err    error
	called chan string
}

var _ Actions = (*fakeActions)(nil)

func newFakeActions() *fakeActions { return &fakeActions{called: make(chan string, 64)} }

func (f *fakeActions) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, call)
	f.called <- call
	return f.err
}

func (f *fakeActions) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *fakeActions) StepDown(_ context.Context, p int, token int64) error {
	return f.record(fmt.Sprintf("stepdown:%d:%d", p, token))
}
func (f *fakeActions) Pause(context.Context) error  { return f.record("pause") }
func (f *fakeActions) Resume(context.Context) error { return f.record("resume") }

func (f *fakeActions) Requeue(_ context.Context, id string) (string, error) {
	if err := f.record("requeue:" + id); err != nil {
		return "", err
	}
	return "01JDNEWJOB0000000000000000", nil
}

func (f *fakeActions) RetryKey(_ context.Context, key, jobID string) (string, error) {
	if err := f.record("retry:" + key + ":" + jobID); err != nil {
		return "", err
	}
	return "01JDPARKED0000000000000000", nil
}

func (f *fakeActions) SkipKey(_ context.Context, key, jobID, by, reason string) (string, error) {
	if err := f.record("skip:" + key + ":" + jobID + ":" + by + ":" + reason); err != nil {
		return "", err
	}
	return "01JDPARKED0000000000000000", nil
}

// testAdminToken is the admin token of the tests' dashboards.
const testAdminToken = "adm-5e3f0c1d9b7a4e22"

// sampleSnapshot is a fleet of three: lockworker-2 leads with token 42,
// this page is served by lockworker-1, which waits; two dead letters.
func sampleSnapshot(now time.Time) Snapshot {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	return Snapshot{
		Self: Self{
			WorkerID: "lockworker-1",
			State:    "waiting_to_acquire_lock",
			Transitions: []Transition{
				{From: "idle", To: "acquiring_lock", Trigger: "TRY_ACQUIRE_LOCK", At: ago(9 * time.Minute)},
				{From: "acquiring_lock", To: "waiting_to_acquire_lock", Trigger: "ACQUIRE_FAILED", At: ago(9 * time.Minute)},
				{From: "waiting_to_acquire_lock", To: "acquiring_lock", Trigger: "RETRY_TIMER", At: ago(4 * time.Second)},
				{From: "acquiring_lock", To: "waiting_to_acquire_lock", Trigger: "ACQUIRE_FAILED", At: ago(3 * time.Second)},
			},
			Lanes: []Lane{{Partition: 0, State: "waiting_to_acquire_lock", Reason: "held by lockworker-2 (token 42) until 12:00:03.000"}},
		},
		Epoch: 42,
		Replicas: []roster.Record{
			{WorkerID: "lockworker-1", Host: "node-a", PID: 4121, Version: "v0.9.0", State: "waiting_to_acquire_lock",
				Since: ago(3 * time.Second), JobsDone: 1873},
			{WorkerID: "lockworker-2", Host: "node-b", PID: 3977, Version: "v0.9.0", State: "working", Leader: true,
				Token: 42, Since: ago(6*time.Minute + 12*time.Second), JobsDone: 2210},
			{WorkerID: "lockworker-3", Host: "node-c", PID: 4480, Version: "v0.8.2", State: "waiting_to_acquire_lock",
				Since: ago(2 * time.Second), JobsDone: 954, LastError: "renew: lease lost: key held by another value",
				LastErrorClass: "renew failed"},
		},
		Queue: Queue{
			Queue: figures.Queue{Pending: 128, Committed: 5037, DeadLettered: 2, Epoch: 42, OldestPendingMs: 95_000,
				Parked: 1, OldestParkedMs: 1_260_000},
			RatePerSec: 14.6,
			DeadLetters: []DeadLetter{
				{ID: "01JD8ZQ3M6K2V7C4XN9B5T1HRA", Class: "exit code 3", Error: "jobs: guest: command exited with code 3: invalid invoice 7731",
					Attempts: 5, FailedAt: ago(12 * time.Minute), Token: 41},
				{ID: "01JD8YV0TQ6R1P2W8E5G3K9MZC", Class: "timeout", Error: "jobs: http: request cut at its deadline: no answer within 30s",
					Attempts: 5, FailedAt: ago(47 * time.Minute), Token: 40},
			},
			Parked: []ParkedKey{
				{Key: "acct-1", Partition: 0, Held: 3, JobID: "01JD8ZX4B2N6R8T0V2X4Z6B8DA", Attempts: 5, Class: "http 422",
					Error: "jobs: http: 422 Unprocessable Entity: iban DE89370400440532013000 rejected", ParkedAt: ago(21 * time.Minute)},
			},
		},
		History: []Leadership{
			{Token: 42, WorkerID: "lockworker-2", Started: ago(6*time.Minute + 12*time.Second), PreviousEnded: EndSteppedDown},
			{Token: 41, WorkerID: "lockworker-3", Started: ago(38 * time.Minute), PreviousEnded: EndLeaseExpired},
			{Token: 40, WorkerID: "lockworker-1", Started: ago(2*time.Hour + 5*time.Minute), PreviousEnded: EndReleased},
			{Token: 39, WorkerID: "lockworker-2", Started: ago(5 * time.Hour)},
		},
	}
}

// becomeLeader: lockworker-2 stepped down, lockworker-1 (this page's
// replica) took over with token 43.
func becomeLeader(s *Snapshot, now time.Time) {
	s.Self.State = "working"
	s.Self.Lanes = []Lane{{Partition: 0, State: "working", Token: 43}}
	s.Self.Transitions = append(s.Self.Transitions,
		Transition{From: "waiting_to_acquire_lock", To: "acquiring_lock", Trigger: "RELEASE_NOTICE", At: now},
		Transition{From: "acquiring_lock", To: "working", Trigger: "LOCK_ACQUIRED", At: now})
	s.Epoch = 43
	for i := range s.Replicas {
		r := &s.Replicas[i]
		switch r.WorkerID {
		case "lockworker-1":
			r.State, r.Leader, r.Token, r.Since = "working", true, 43, now
		case "lockworker-2":
			r.State, r.Leader, r.Token, r.Since = "waiting_to_acquire_lock", false, 0, now
		}
	}
	s.History = append([]Leadership{{Token: 43, WorkerID: "lockworker-1", Started: now, PreviousEnded: EndSteppedDown}}, s.History...)
}
