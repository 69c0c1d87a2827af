package daemon

import (
	"testing"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/roster"
)

// TestPartitionsOfRecords: the page's partitions table takes each
// partition's owner from the records; while two records claim one
// partition (a handover seen half-way), the higher token, the newer
// leadership, wins; a partition nobody claims has no owner; without
// partitions there is no table.
func TestPartitionsOfRecords(t *testing.T) {
	parts := []figures.Queue{{Pending: 1}, {Pending: 2, Paused: true}, {}}
	records := []roster.Record{
		{WorkerID: "a", Partitions: []roster.Owned{{Partition: 0, Token: 5}, {Partition: 1, Token: 3}}},
		{WorkerID: "b", Partitions: []roster.Owned{{Partition: 1, Token: 4}, {Partition: 7, Token: 9}}},
	}
	got := partitionsOf(parts, records)
	want := []figures.Partition{
		{Partition: 0, Owner: "a", Token: 5, Queue: figures.Queue{Pending: 1}},
		{Partition: 1, Owner: "b", Token: 4, Queue: figures.Queue{Pending: 2, Paused: true}},
		{Partition: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("partition %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := partitionsOf(nil, records); got != nil {
		t.Errorf("without partitions: %+v", got)
	}
}
