package fencecheck_test

import (
	"slices"
	"testing"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// pw is a write of job seq (of jobs) by the leader of partition part with
// token token; the key is the job's.
func pw(jobs []fencecheck.Job, worker string, part int, token int64, seq int) fencecheck.Write {
	return fencecheck.Write{Worker: worker, Token: token, JobID: "j" + string(rune('a'+seq)), Seq: seq,
		Partition: part, Key: jobs[seq].Key}
}

// TestCheckPartitions: each key is judged in its own order, each
// partition by its own tokens over all its keys, and the checker refuses
// what the keys model forbids: a job committed under another partition's
// token, two jobs of one key taking effect out of enqueue order, a stale
// leader's write on any key of a partition after its successor's; and it
// lets keys of one partition interleave.
func TestCheckPartitions(t *testing.T) {
	// Keys a and c are partition 0's, b partition 1's; enqueue order:
	// a0 b1 a2 c3 b4 a5.
	jobs := []fencecheck.Job{{Key: "a", Partition: 0}, {Key: "b", Partition: 1}, {Key: "a", Partition: 0}, {Key: "c", Partition: 0}, {Key: "b", Partition: 1}, {Key: "a", Partition: 0}}
	p0 := func(worker string, token int64, seqs ...int) []fencecheck.Write {
		var out []fencecheck.Write
		for _, s := range seqs {
			out = append(out, pw(jobs, worker, 0, token, s))
		}
		return out
	}
	p1 := func(worker string, token int64, seqs ...int) []fencecheck.Write {
		var out []fencecheck.Write
		for _, s := range seqs {
			out = append(out, pw(jobs, worker, 1, token, s))
		}
		return out
	}
	// x writes job seq under partition part's token, whatever the job's.
	x := func(worker string, part int, token int64, seq int) []fencecheck.Write {
		return []fencecheck.Write{pw(jobs, worker, part, token, seq)}
	}
	cat := func(parts ...[]fencecheck.Write) []fencecheck.Write { return slices.Concat(parts...) }
	for _, c := range []struct {
		name   string
		fenced bool
		writes []fencecheck.Write
		want   []fencecheck.Kind
	}{
		{"two partitions in parallel", true, cat(p1("w", 1, 1), p0("v", 1, 0, 2), p1("w", 1, 4), p0("v", 1, 3, 5)), nil},
		// The same token number in two partitions is two leaderships.
		{"equal tokens of two partitions, two workers", true, cat(p0("v", 3, 0, 2, 3), p1("w", 3, 1, 4), p0("v", 3, 5)), nil},
		{"handover with a redo in one partition", true, cat(p0("v", 1, 0, 2), p1("w", 1, 1), p0("u", 2, 2, 3, 5), p1("w", 1, 4)), nil},
		{"stale write of a partition rejected", true, cat(p0("v", 1, 0), p0("u", 2, 0, 2, 3), p0("v", 1, 2), p1("w", 1, 1, 4), p0("u", 2, 5)), nil},
		// A lower token of another partition is no stale write.
		{"tokens compared within a partition only", true, cat(p0("v", 9, 0, 2), p1("w", 1, 1, 4), p0("v", 9, 3, 5)), nil},

		{"job committed under another partition's token", true,
			cat(p0("v", 1, 0), p1("w", 1, 1), x("w", 1, 1, 2), p0("v", 1, 2, 3, 5), p1("w", 1, 4)),
			[]fencecheck.Kind{fencecheck.WrongPartition}},
		{"job committed only under another partition's token", true,
			cat(p0("v", 1, 0), p1("w", 1, 1), x("w", 1, 1, 2), p0("v", 1, 3, 5), p1("w", 1, 4)),
			[]fencecheck.Kind{fencecheck.WrongPartition, fencecheck.Lost}},
		// Jobs 2 and 5 of key a swapped (job 3, key c, between them).
		{"reorder within one key", true,
			cat(p0("v", 1, 0), p1("w", 1, 1, 4), p0("v", 1, 5, 3, 2)),
			[]fencecheck.Kind{fencecheck.Lost, fencecheck.KeyReordered, fencecheck.Reordered}},
		// Keys a and c of partition 0 in any order between them.
		{"keys of one partition interleave", true, cat(p0("v", 1, 3, 0), p1("w", 1, 4), p0("v", 1, 2), p1("w", 1, 1), p0("v", 1, 5)),
			[]fencecheck.Kind{fencecheck.Lost, fencecheck.KeyReordered, fencecheck.Reordered}}, // b4 before b1 is still a key's reorder
		{"keys of one partition interleave, each in order", true, cat(p0("v", 1, 3, 0), p1("w", 1, 1), p0("v", 1, 2), p1("w", 1, 4), p0("v", 1, 5)), nil},
		{"stale write on another key of the partition accepted", false,
			cat(p0("v", 1, 0), p0("u", 2, 3), p0("v", 1, 2), p1("w", 1, 1, 4), p0("u", 2, 5)),
			[]fencecheck.Kind{fencecheck.TokenDecreased}},
		{"new leader of a partition starts over", true,
			cat(p0("v", 1, 0, 2, 3), p1("w", 1, 1, 4), p0("u", 2, 0, 5)),
			[]fencecheck.Kind{fencecheck.Reordered, fencecheck.Reordered}},
		{"stale write of a partition accepted", false,
			cat(p0("v", 1, 0), p0("u", 2, 0, 2, 3), p0("v", 1, 2), p1("w", 1, 1, 4), p0("u", 2, 5)),
			[]fencecheck.Kind{fencecheck.TokenDecreased}},
		{"token of a partition reused by another worker", true,
			cat(p0("v", 1, 0, 2), p0("u", 1, 3, 5), p1("w", 1, 1, 4)),
			[]fencecheck.Kind{fencecheck.TokenReused, fencecheck.TokenReused}},
		{"a partition's job lost", true, cat(p0("v", 1, 0, 2, 3, 5), p1("w", 1, 1)), []fencecheck.Kind{fencecheck.Lost}},
		{"key not the job's", true,
			cat(p0("v", 1, 0), []fencecheck.Write{{Worker: "w", Token: 1, JobID: "jb", Seq: 1, Partition: 1, Key: "z"}}, p1("w", 1, 1), p0("v", 1, 2, 3, 5), p1("w", 1, 4)),
			[]fencecheck.Kind{fencecheck.Mismatch}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := fencecheck.CheckPartitions(history(c.fenced, c.writes...), jobs, 2, 1)
			if got := kinds(vs); !slices.Equal(got, c.want) {
				t.Fatalf("violations = %v, want %v\n%v", got, c.want, vs)
			}
			for _, v := range vs {
				if v.Record.Index >= 0 && v.Record.Key != jobs[v.Record.Seq].Key && v.Kind != fencecheck.Mismatch {
					t.Fatalf("violation names seq %d (key %q), not its job: %v", v.Record.Seq, v.Record.Key, v)
				}
			}
		})
	}
}

// Without partitions (every job partition 0, no keys: one serial queue)
// CheckPartitions is CheckBatch.
func TestCheckPartitionsOfOne(t *testing.T) {
	jobs := make([]fencecheck.Job, 3)
	for _, ws := range [][]fencecheck.Write{
		{w(1, 0), w(1, 1), w(2, 1), w(2, 2)},
		{w(1, 0), w(1, 2), w(1, 1)},
		{w(1, 0), w(2, 0), w(1, 1), w(2, 1)},
	} {
		for _, fenced := range []bool{true, false} {
			h := history(fenced, ws...)
			if got, want := fencecheck.CheckPartitions(h, jobs, 1, 1), fencecheck.CheckBatch(h, 3, 1); !slices.Equal(kinds(got), kinds(want)) {
				t.Fatalf("%v: CheckPartitions %v, CheckBatch %v", ws, got, want)
			}
		}
	}
}

// A lost run of one key, up to batch jobs, may run again under the next
// leader; further back is a reorder. Keyless jobs of a partitioned queue
// are each their own: in any order.
func TestCheckPartitionsRuns(t *testing.T) {
	jobs := []fencecheck.Job{{Key: "a", Partition: 0}, {Key: "a", Partition: 0}, {Key: "a", Partition: 0}, {Key: "a", Partition: 0}, {Key: "", Partition: 0}, {Key: "", Partition: 0}}
	at := func(worker string, token int64, seqs ...int) []fencecheck.Write {
		var out []fencecheck.Write
		for _, s := range seqs {
			out = append(out, pw(jobs, worker, 0, token, s))
		}
		return out
	}
	for _, c := range []struct {
		name   string
		writes []fencecheck.Write
		want   []fencecheck.Kind
	}{
		{"the lost run of two redone", slices.Concat(at("v", 1, 0, 1, 2), at("u", 2, 1, 2, 3, 5, 4)), nil},
		{"redone from before the lost run", slices.Concat(at("v", 1, 0, 1, 2), at("u", 2, 0, 1, 2, 3, 4, 5)),
			[]fencecheck.Kind{fencecheck.Reordered}}, // job 0, then the key goes on from it
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := kinds(fencecheck.CheckPartitions(history(true, c.writes...), jobs, 2, 2)); !slices.Equal(got, c.want) {
				t.Fatalf("violations = %v, want %v", got, c.want)
			}
		})
	}
}
