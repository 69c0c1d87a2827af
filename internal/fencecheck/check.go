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
// jobs, numbered 0..jobs-1 in enqueue order, that all finished. It returns
// every violation found, in history order; none means the history is
// consistent with one fenced leader at a time and at-least-once, in-order
// delivery.
func Check(history []Record, jobs int) []Violation {
	var out []Violation
	flag := func(k Kind, r Record, format string, args ...any) {
		out = append(out, Violation{Kind: k, Record: r, Detail: fmt.Sprintf(format, args...)})
	}
	owner := map[int64]string{}  // token -> the worker first seen with it
	idOf := map[int]string{}     // seq -> job ID
	done := map[[2]int64]bool{}  // (token, seq) accepted
	var lastTok int64 = -1 << 63 // highest accepted token so far
	lastSeq := -1                // seq of the last accepted effect
	for _, r := range history {
		if w, ok := owner[r.Token]; !ok {
			owner[r.Token] = r.Worker
		} else if w != r.Worker {
			flag(TokenReused, r, "token %d was first used by worker %s", r.Token, w)
		}
		if r.Seq < 0 || r.Seq >= jobs {
			flag(Mismatch, r, "seq outside [0, %d)", jobs)
			continue
		}
		if id, ok := idOf[r.Seq]; !ok {
			idOf[r.Seq] = r.JobID
		} else if id != r.JobID {
			flag(Mismatch, r, "seq %d was job %s before", r.Seq, id)
		}
		if !r.Accepted {
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
		case r.Seq == lastSeq+1:
		case r.Seq > lastSeq+1:
			flag(Lost, r, "jobs %d..%d have no effect before it", lastSeq+1, r.Seq-1)
		case r.Token > lastTok && r.Seq == lastSeq:
			// A new leader redoes the job whose commit its predecessor lost.
		default:
			flag(Reordered, r, "expected seq %d after seq %d", lastSeq+1, lastSeq)
		}
		done[key] = true
		// Carry on from this write so one fault is reported once, not as a
		// cascade.
		lastTok = max(lastTok, r.Token)
		lastSeq = max(lastSeq, r.Seq)
	}
	if lastSeq < jobs-1 {
		flag(Lost, Record{Index: -1}, "jobs %d..%d have no accepted effect", lastSeq+1, jobs-1)
	}
	return out
}
