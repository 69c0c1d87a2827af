package fencecheck

import "fmt"

// Kind classifies a violation; see the package documentation.
type Kind string

// The kinds of violation Check reports.
const (
	TokenDecreased Kind = "token-decreased"
	TokenReused    Kind = "token-reused"
	Duplicated     Kind = "duplicated"
	Reordered      Kind = "reordered"
	Lost           Kind = "lost"
	Mismatch       Kind = "mismatch"
)

// Violation is one breach of the rules Check enforces.
type Violation struct {
	Kind Kind
	// Record is the write at fault; for Lost at the end of the history it
	// is the zero Record with Index -1.
	Record Record
	// Detail says what was expected.
	Detail string
}

func (v Violation) Error() string {
	if v.Record.Index < 0 {
		return fmt.Sprintf("fencecheck: %s: %s", v.Kind, v.Detail)
	}
	r := v.Record
	return fmt.Sprintf("fencecheck: %s at write %d (worker %s, token %d, job %s, seq %d): %s",
		v.Kind, r.Index, r.Worker, r.Token, r.JobID, r.Seq, v.Detail)
}

// Check judges a history (as Store.History returns it) of a queue of jobs
// jobs, numbered 0..jobs-1 in enqueue order, that all finished, processed
// one job at a time (JOB_BATCH=1). It returns every violation found, in
// history order; none means the history is consistent with one fenced
// leader at a time and at-least-once, in-order delivery.
func Check(history []Record, jobs int) []Violation {
	return CheckBatch(history, jobs, 1)
}

// CheckBatch is Check for a queue processed in batches of up to batch
// jobs (group commit): a new leader may run again, in order, up to batch
// jobs before the next one, the batch its predecessor lost.
func CheckBatch(history []Record, jobs, batch int) []Violation {
	var out []Violation
	flag := func(k Kind, r Record, format string, args ...any) {
		out = append(out, Violation{Kind: k, Record: r, Detail: fmt.Sprintf(format, args...)})
	}
	batch = max(batch, 1)
	owner := map[int64]string{}  // token -> the worker first seen with it
	idOf := map[int]string{}     // seq -> job ID
	done := map[[2]int64]bool{}  // (token, seq) accepted
	var lastTok int64 = -1 << 63 // highest accepted token so far
	high := -1                   // highest seq accepted so far
	cur := -1                    // seq of the last accepted effect
	for _, r := range history {
		if !identify(r, jobs, owner, idOf, flag) || !r.Accepted {
			continue
		}
		if r.Token < lastTok {
			// Judged as an intruder: the queue's own progress goes on from
			// the writes around it, so one stale write is reported once.
			flag(TokenDecreased, r, "accepted after token %d: two leaders' effects interleave", lastTok)
			continue
		}
		key := [2]int64{r.Token, int64(r.Seq)}
		switch {
		case done[key]:
			flag(Duplicated, r, "job already accepted under this token")
		case r.Seq == cur+1 && r.Seq <= high+1:
			// The next job, or the next of a redo.
		case r.Seq > high+1:
			flag(Lost, r, "jobs %d..%d have no effect before it", high+1, r.Seq-1)
		case r.Token > lastTok && r.Seq > high-batch:
			// A new leader resumes after the last committed job: it redoes
			// what its predecessor's last batch (at most batch jobs) did
			// without committing it.
		default:
			if r.Token > lastTok {
				flag(Reordered, r, "a new leader may redo jobs %d..%d (its predecessor's last batch of up to %d), not job %d",
					max(0, high+1-batch), high, batch, r.Seq)
			} else {
				flag(Reordered, r, "expected seq %d after seq %d", cur+1, cur)
			}
		}
		done[key] = true
		// Carry on from this write so one fault is reported once, not as a
		// cascade.
		lastTok = max(lastTok, r.Token)
		high = max(high, r.Seq)
		cur = r.Seq
	}
	if high < jobs-1 {
		flag(Lost, Record{Index: -1}, "jobs %d..%d have no accepted effect", high+1, jobs-1)
	}
	return out
}

// identify checks what r says of itself against what came before: its
// token belongs to one worker, its seq is in range and names one job ID.
// False when the seq is out of range (nothing more can be judged).
func identify(r Record, jobs int, owner map[int64]string, idOf map[int]string, flag func(Kind, Record, string, ...any)) bool {
	if w, ok := owner[r.Token]; !ok {
		owner[r.Token] = r.Worker
	} else if w != r.Worker {
		flag(TokenReused, r, "token %d was first used by worker %s", r.Token, w)
	}
	if r.Seq < 0 || r.Seq >= jobs {
		flag(Mismatch, r, "seq outside [0, %d)", jobs)
		return false
	}
	if id, ok := idOf[r.Seq]; !ok {
		idOf[r.Seq] = r.JobID
	} else if id != r.JobID {
		flag(Mismatch, r, "seq %d was job %s before", r.Seq, id)
	}
	return true
}
