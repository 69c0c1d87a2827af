package fencecheck

import (
	"fmt"
	"slices"
)

// The kinds of violation only CheckPartitions reports.
const (
	WrongPartition Kind = "wrong-partition"
	KeyReordered   Kind = "key-reordered"
)

// Job is what the enqueuer knows of one job of a partitioned queue: its
// ordering key and the partition that key picks. A history's Seq indexes
// a []Job.
type Job struct {
	Key       string
	Partition int
}

// CheckPartitions judges a history of a partitioned queue whose jobs (in
// enqueue order, Seq = index) all finished, each partition processed in
// batches of up to batch jobs. Beyond what CheckBatch says of each
// partition on its own (its jobs in its own enqueue order, its tokens
// strictly increasing from one leadership to the next in commit order, one
// worker per token, no job lost), it flags:
//
//   - WrongPartition: an accepted write of a job under another partition's
//     leadership (Write.Partition, the partition its token belongs to, is
//     not the job's). Such a write is left out of its partition's check.
//   - KeyReordered: a job of a key whose first accepted effect comes after
//     that of a job of the same key enqueued later.
//   - Mismatch: a write whose key is not its job's.
//
// With every job in partition 0 and no keys it is CheckBatch.
func CheckPartitions(history []Record, jobs []Job, batch int) []Violation {
	var out []Violation
	flag := func(k Kind, r Record, format string, args ...any) {
		out = append(out, Violation{Kind: k, Record: r, Detail: fmt.Sprintf(format, args...)})
	}
	local := make([]int, len(jobs)) // seq -> position in its partition
	seqs := map[int][]int{}         // partition -> its jobs' seqs, in order
	for seq, j := range jobs {
		local[seq] = len(seqs[j.Partition])
		seqs[j.Partition] = append(seqs[j.Partition], seq)
	}
	sub := map[int][]Record{} // partition -> its writes, Seq made local
	first := map[int]bool{}   // seq -> an effect was accepted
	lastOfKey := map[string]int{}
	for _, r := range history {
		if r.Seq < 0 || r.Seq >= len(jobs) {
			flag(Mismatch, r, "seq outside [0, %d)", len(jobs))
			continue
		}
		j := jobs[r.Seq]
		if r.Key != j.Key {
			flag(Mismatch, r, "job %d has key %q, the write says %q", r.Seq, j.Key, r.Key)
			continue
		}
		if r.Partition != j.Partition {
			if r.Accepted {
				flag(WrongPartition, r, "job %d (key %q) is partition %d's, committed under partition %d's token %d",
					r.Seq, j.Key, j.Partition, r.Partition, r.Token)
			}
			continue
		}
		lr := r
		lr.Seq = local[r.Seq]
		sub[j.Partition] = append(sub[j.Partition], lr)
		if !r.Accepted || first[r.Seq] || j.Key == "" {
			continue
		}
		first[r.Seq] = true
		if prev, ok := lastOfKey[j.Key]; ok && prev > r.Seq {
			flag(KeyReordered, r, "job %d of key %q took effect after job %d of that key, enqueued later", r.Seq, j.Key, prev)
			continue
		}
		lastOfKey[j.Key] = r.Seq
	}
	parts := make([]int, 0, len(seqs))
	for p := range seqs {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		for _, v := range CheckBatch(sub[p], len(seqs[p]), batch) {
			if v.Record.Index >= 0 {
				v.Record.Seq = seqs[p][v.Record.Seq] // back to the queue's numbering
			}
			v.Detail = fmt.Sprintf("partition %d (numbered in its own order): %s", p, v.Detail)
			out = append(out, v)
		}
	}
	// History order; the end-of-history Lost (Index -1) last.
	slices.SortStableFunc(out, func(a, b Violation) int {
		ai, bi := a.Record.Index, b.Record.Index
		if ai < 0 {
			ai = len(history)
		}
		if bi < 0 {
			bi = len(history)
		}
		return ai - bi
	})
	return out
}
