package fencecheck_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// runLog builds a crafted run on a real Store with a clock that moves a
// millisecond per event, so a test states a history step by step.
type runLog struct {
	now   time.Time
	store *fencecheck.Store
	jobs  []fencecheck.Job
	runs  int
}

func newRunLog(jobs []fencecheck.Job) *runLog {
	l := &runLog{now: time.Unix(1_700_000_000, 0), jobs: jobs}
	l.store = fencecheck.NewStore(fencecheck.Config{Now: func() time.Time {
		l.now = l.now.Add(time.Millisecond)
		return l.now
	}})
	return l
}

// w is the write of a run of job seq under partition part's token.
func (l *runLog) w(seq int, token int64) fencecheck.Write {
	j := l.jobs[seq]
	return fencecheck.Write{Worker: fmt.Sprintf("w%d", token), Token: token, JobID: j.ID, Seq: seq,
		Partition: j.Partition, Key: j.Key}
}

// begin starts a run of w and returns it, with its Run set.
func (l *runLog) begin(w fencecheck.Write) fencecheck.Write {
	l.runs++
	w.Run = fmt.Sprintf("r%d", l.runs)
	l.store.Begin(w)
	return w
}

// run is a whole run that writes its effect.
func (l *runLog) run(seq int, token int64) {
	l.store.Write(l.begin(l.w(seq, token)))
}

// fail is a whole run that fails.
func (l *runLog) fail(seq int, token int64) {
	l.store.Fail(l.begin(l.w(seq, token)))
}

func (l *runLog) op(k fencecheck.EventKind, seq int) {
	j := l.jobs[seq]
	l.store.Note(k, fencecheck.Write{JobID: j.ID, Key: j.Key, Partition: j.Partition, Seq: seq})
}

func (l *runLog) check() []fencecheck.Violation {
	return fencecheck.CheckAll(l.store.History(), l.store.Events(), l.jobs, 2, 1)
}

// tickWrite is a run of schedule s's tick at offset at (seconds), as job id.
func tickWrite(id string, token int64, at int) fencecheck.Write {
	return fencecheck.Write{Worker: fmt.Sprintf("w%d", token), Token: token, JobID: id, Seq: -1, Partition: 1, Key: "sched",
		Schedule: "every-second", ScheduledAt: time.Unix(1_700_000_000+int64(at), 0)}
}

// TestCheckRunsCatchesEachViolation: every rule the chaos suite's checker
// holds a run to, each shown failing on a crafted history that breaks it
// and nothing else; and a history with every legitimate irregularity
// (failures, a redo at a change of leader, a park retried and one
// skipped, a delayed job on time, a tick redone under a new token, an
// idempotent enqueue answered with the first ID) passing.
func TestCheckRunsCatchesEachViolation(t *testing.T) {
	due := time.Unix(1_700_000_000, 0).Add(time.Second)
	jobs := func() []fencecheck.Job {
		// Key a (partition 0): jobs 0, 1, 2; key b (partition 1): 3, 4;
		// job 5 is delayed on key d (partition 0); job 6 on key b was
		// enqueued twice with one idempotency key.
		return []fencecheck.Job{
			{Key: "a", ID: "A0"}, {Key: "a", ID: "A1"}, {Key: "a", ID: "A2"},
			{Key: "b", Partition: 1, ID: "B3"}, {Key: "b", Partition: 1, ID: "B4"},
			{Key: "d", ID: "D5", DueAt: due},
			{Key: "b", Partition: 1, ID: "B6", Idempotency: "once"},
		}
	}
	// clean is a legitimate run; spoil breaks it at point at ("start",
	// "parked": while key b is parked on job 4, "end").
	clean := func(l *runLog, at string, spoil func(l *runLog)) {
		hook := func(point string) {
			if point == at {
				spoil(l)
			}
		}
		hook("start")
		l.fail(0, 1) // a failure holds the key...
		l.run(0, 1)  // ...until the retry succeeds
		l.run(3, 1)
		l.run(1, 1)
		l.run(1, 2) // a new leader redoes the job whose commit was lost
		l.fail(2, 2)
		l.op(fencecheck.ParkSeen, 2)
		l.op(fencecheck.Retried, 2)
		l.run(2, 2)
		l.fail(4, 1)
		l.op(fencecheck.ParkSeen, 4)
		hook("parked")
		l.op(fencecheck.Skipped, 4) // dead-lettered: owes no effect
		l.run(6, 1)
		l.store.Write(l.begin(tickWrite("T1", 1, 1)))
		l.store.Write(l.begin(tickWrite("T2", 1, 2)))
		l.store.Write(l.begin(tickWrite("T2", 2, 2))) // redone by a new leader
		l.now = due
		l.run(5, 2)
		hook("end")
	}
	for _, c := range []struct {
		name  string
		want  fencecheck.Kind
		at    string
		spoil func(l *runLog)
	}{
		{"clean", "", "", nil},
		{"a job still held by a parked key at the end is not lost", "", "end", func(l *runLog) {
			l.jobs = append(l.jobs, fencecheck.Job{Key: "a", ID: "A7", Held: true})
		}},
		{"two jobs of one key in flight at once", fencecheck.KeyOverlap, "end", func(l *runLog) {
			// Under token 3, job 2 begins while job 1 has not ended.
			w := l.begin(l.w(1, 3))
			l.store.Fail(l.begin(l.w(2, 3)))
			l.store.Fail(w)
		}},
		{"a key's job started before an earlier one finished", fencecheck.KeyEarly, "start", func(l *runLog) {
			l.fail(0, 1)
			l.fail(1, 1) // job 0 failed and has no effect yet
		}},
		{"a parked key's later job run before the park was resolved", fencecheck.ParkBroken, "parked", func(l *runLog) {
			l.fail(6, 1)
		}},
		{"a job lost", fencecheck.Lost, "end", func(l *runLog) {
			l.jobs = append(l.jobs, fencecheck.Job{Key: "a", ID: "A7"}) // acknowledged, never committed, never skipped
		}},
		{"a stale leader's effect after its successor's", fencecheck.TokenDecreased, "end", func(l *runLog) {
			// An unfenced store took token 1 on partition 0 after token 2.
			l.store = unfencedCopy(l)
			l.store.Write(l.begin(l.w(0, 1)))
		}},
		{"a delayed job run before it was due", fencecheck.DelayedEarly, "start", func(l *runLog) {
			l.jobs[5].DueAt = due.Add(time.Hour)
		}},
		{"a tick run twice", fencecheck.TickDuplicate, "end", func(l *runLog) {
			l.store.Write(l.begin(tickWrite("T2bis", 2, 2))) // the tick enqueued again
		}},
		{"a tick's effect accepted twice under one token", fencecheck.TickDuplicate, "end", func(l *runLog) {
			l.store.Write(l.begin(tickWrite("T2", 2, 2)))
		}},
		{"an idempotent enqueue that ran twice", fencecheck.EnqueuedTwice, "end", func(l *runLog) {
			w := l.w(6, 1)
			w.JobID = "B6bis" // a second job with job 6's payload
			l.store.Write(l.begin(w))
		}},
		{"an idempotent enqueue answered with a second ID", fencecheck.EnqueuedTwice, "end", func(l *runLog) {
			l.jobs[6].Duplicates = []string{"B6bis"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newRunLog(jobs())
			clean(l, c.at, c.spoil)
			v := l.check()
			var kinds []fencecheck.Kind
			for _, x := range v {
				kinds = append(kinds, x.Kind)
			}
			if c.want == "" {
				if len(v) > 0 {
					t.Fatalf("a legitimate run was flagged: %v", v)
				}
				return
			}
			if !slices.Contains(kinds, c.want) {
				t.Fatalf("want a %s violation, got %v", c.want, v)
			}
			for _, k := range kinds {
				if k != c.want {
					t.Errorf("the history breaks one rule, yet %s was flagged too: %v", k, v)
				}
			}
		})
	}
}

// unfencedCopy is l's store replayed into one with fencing off, so a
// crafted stale write is accepted as an unfenced store would accept it.
func unfencedCopy(l *runLog) *fencecheck.Store {
	s := fencecheck.NewStore(fencecheck.Config{Unfenced: true, Now: func() time.Time {
		l.now = l.now.Add(time.Millisecond)
		return l.now
	}})
	for _, e := range l.store.Events() {
		switch e.Kind {
		case fencecheck.Wrote:
			s.Write(e.Write)
		case fencecheck.Began:
			s.Begin(e.Write)
		case fencecheck.Failed:
			s.Fail(e.Write)
		default:
			s.Note(e.Kind, e.Write)
		}
	}
	return s
}
