package fencecheck

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The kinds of violation only CheckPartitions reports.
const (
	WrongPartition Kind = "wrong-partition"
	KeyReordered   Kind = "key-reordered"
)

// Job is what the enqueuer knows of one job of a partitioned queue: its
// ordering key and the partition that key picks, and what CheckRuns needs.
// A history's Seq indexes a []Job.
type Job struct {
	Key       string
	Partition int
	// ID is the ID the enqueue answered; "" when unknown (then no write
	// is judged against it).
	ID string
	// Idempotency is the idempotency key the job was enqueued with
	// (twice), "" for none; Duplicates are IDs a repeated enqueue with it
	// answered other than ID: each is a job enqueued twice.
	Idempotency string
	Duplicates  []string
	// DueAt is a delayed job's due time (zero: not delayed).
	DueAt time.Time
	// Skipped: an operator skipped it (it went to the dead letters);
	// Held: it was still parked, or held behind a parked job, at the end.
	// Either excuses a job without an accepted effect from Lost.
	Skipped, Held bool
}

// CheckPartitions judges a history of a queue of partitions partitions
// whose jobs (in enqueue order, Seq = index) all finished, processed as
// lockworker's keys model does: the jobs of one group (a key; the keyless
// jobs of a queue of one partition; else each keyless job alone) one at a
// time in enqueue order, runs of up to batch jobs of a group at a time,
// groups side by side. It flags:
//
//   - TokenDecreased, TokenReused: per partition, over every group of it:
//     an accepted token below one accepted before in that partition, one
//     token used by two workers.
//   - Per group, what CheckBatch says of a queue (Reordered, Duplicated,
//     Lost, Mismatch), the group's jobs numbered in the group's order: a
//     new leader may redo the group's last run (up to batch jobs), in
//     order, and nothing else out of order.
//   - WrongPartition: an accepted write of a job under another
//     partition's leadership (Write.Partition, the partition its token
//     belongs to, is not the job's). Such a write is left out of the rest.
//   - KeyReordered: a job of a key whose first accepted effect comes after
//     that of a job of the same key enqueued later.
//   - Mismatch: a write whose key is not its job's.
//
// A job Skipped or Held without an accepted effect is owed none: it is
// left out of its group. A schedule's ticks (Write.Schedule) count for
// the token rules only; CheckRuns judges the rest of them, and the
// second job of an idempotent enqueue.
//
// Order between groups is not judged: the model does not promise it. With
// one partition and no keys it is CheckBatch.
func CheckPartitions(history []Record, jobs []Job, partitions, batch int) []Violation {
	c := &partitionCheck{jobs: jobs, groupOf: make([]string, len(jobs)), local: make([]int, len(jobs)),
		members: map[string][]int{}, sub: map[string][]Record{}}
	accepted := map[int]bool{}
	for _, r := range history {
		if r.Accepted && r.Schedule == "" {
			accepted[r.Seq] = true
		}
	}
	for seq, j := range jobs {
		if (j.Skipped || j.Held) && !accepted[seq] {
			c.local[seq] = -1 // skipped or held: no effect is owed
			continue
		}
		g := groupName(j, seq, partitions)
		c.groupOf[seq], c.local[seq] = g, len(c.members[g])
		c.members[g] = append(c.members[g], seq)
	}
	c.split(history)
	c.out = append(c.out, tokensByPartition(history, jobs)...)
	c.judgeGroups(batch)
	// History order; the end-of-history Lost (Index -1) last.
	slices.SortStableFunc(c.out, func(a, b Violation) int {
		ai, bi := a.Record.Index, b.Record.Index
		if ai < 0 {
			ai = len(history)
		}
		if bi < 0 {
			bi = len(history)
		}
		return ai - bi
	})
	return c.out
}

// partitionCheck is one CheckPartitions: the jobs by group and the
// history split by group.
type partitionCheck struct {
	jobs    []Job
	groupOf []string         // seq -> its group
	local   []int            // seq -> its place in its group
	members map[string][]int // group -> its jobs' seqs, in order
	sub     map[string][]Record
	out     []Violation
}

// groupName is the group of job seq: its key, or without one the
// partition's serial queue (one partition) or the job alone.
func groupName(j Job, seq, partitions int) string {
	switch {
	case j.Key != "":
		return "k:" + j.Key
	case partitions <= 1:
		return "s:" + strconv.Itoa(j.Partition)
	}
	return "j:" + strconv.Itoa(seq)
}

func (c *partitionCheck) flag(k Kind, r Record, format string, args ...any) {
	c.out = append(c.out, Violation{Kind: k, Record: r, Detail: fmt.Sprintf(format, args...)})
}

// split checks what each write says of its job, and files the writes by
// group, each Seq made local to its group.
func (c *partitionCheck) split(history []Record) {
	first := map[int]bool{} // seq -> an effect was accepted
	lastOfKey := map[string]int{}
	for _, r := range history {
		if r.Schedule != "" {
			continue // a tick: CheckRuns judges it
		}
		if r.Seq < 0 || r.Seq >= len(c.jobs) {
			c.flag(Mismatch, r, "seq outside [0, %d)", len(c.jobs))
			continue
		}
		j := c.jobs[r.Seq]
		if j.Idempotency != "" && j.ID != "" && r.JobID != j.ID {
			continue // a second job of one idempotent enqueue: CheckRuns judges it
		}
		if c.local[r.Seq] < 0 {
			continue
		}
		if r.Key != j.Key {
			c.flag(Mismatch, r, "job %d has key %q, the write says %q", r.Seq, j.Key, r.Key)
			continue
		}
		if r.Partition != j.Partition {
			if r.Accepted {
				c.flag(WrongPartition, r, "job %d (key %q) is partition %d's, committed under partition %d's token %d",
					r.Seq, j.Key, j.Partition, r.Partition, r.Token)
			}
			continue
		}
		lr := r
		lr.Seq = c.local[r.Seq]
		c.sub[c.groupOf[r.Seq]] = append(c.sub[c.groupOf[r.Seq]], lr)
		if !r.Accepted || first[r.Seq] || j.Key == "" {
			continue
		}
		first[r.Seq] = true
		if prev, ok := lastOfKey[j.Key]; ok && prev > r.Seq {
			c.flag(KeyReordered, r, "job %d of key %q took effect after job %d of that key, enqueued later", r.Seq, j.Key, prev)
			continue
		}
		lastOfKey[j.Key] = r.Seq
	}
}

// judgeGroups judges each group's writes as CheckBatch judges a queue;
// the token rules are judged per partition instead (tokensByPartition).
func (c *partitionCheck) judgeGroups(batch int) {
	groups := make([]string, 0, len(c.members))
	for g := range c.members {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		seqs := c.members[g]
		for _, v := range CheckBatch(c.sub[g], len(seqs), batch) {
			if v.Kind == TokenDecreased || v.Kind == TokenReused {
				continue
			}
			if v.Record.Index >= 0 {
				v.Record.Seq = seqs[v.Record.Seq] // back to the queue's numbering
			}
			v.Detail = fmt.Sprintf("group %s (numbered in its own order): %s", g, v.Detail)
			c.out = append(c.out, v)
		}
	}
}

// tokensByPartition flags, partition by partition over all its groups,
// an accepted token below one accepted before (two leaders' effects
// interleaved) and a token used by two workers. Writes under another
// partition's token (WrongPartition) are left out.
func tokensByPartition(history []Record, jobs []Job) []Violation {
	var out []Violation
	high := map[int]int64{}        // partition -> highest accepted token
	owner := map[[2]int64]string{} // (partition, token) -> worker
	for _, r := range history {
		tick := r.Schedule != ""
		if !tick && (r.Seq < 0 || r.Seq >= len(jobs) || jobs[r.Seq].Partition != r.Partition || jobs[r.Seq].Key != r.Key) {
			continue
		}
		id := [2]int64{int64(r.Partition), r.Token}
		if w, ok := owner[id]; !ok {
			owner[id] = r.Worker
		} else if w != r.Worker {
			out = append(out, Violation{Kind: TokenReused, Record: r,
				Detail: fmt.Sprintf("partition %d: token %d was first used by worker %s", r.Partition, r.Token, w)})
		}
		if !r.Accepted {
			continue
		}
		if h, ok := high[r.Partition]; ok && r.Token < h {
			out = append(out, Violation{Kind: TokenDecreased, Record: r,
				Detail: fmt.Sprintf("partition %d: accepted after token %d: two leaders' effects interleave", r.Partition, h)})
			continue
		}
		high[r.Partition] = max(high[r.Partition], r.Token)
	}
	return out
}
