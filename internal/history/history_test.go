package history

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewValidates(t *testing.T) {
	_, err := New(Config{MaxLen: -1})
	for _, want := range []string{"Client is required", "Keys is required", "MaxLen must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New = %v, want it to say %q", err, want)
		}
	}
}

// TestHowTheyEnded: the first leadership has no predecessor; one that
// recorded its end hands its reason (and a handover time) to the next;
// one that did not reads as lease_expired; an end record of an older
// token does not count for a newer one; a re-sent start adds nothing.
func TestHowTheyEnded(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	h, err := New(Config{Client: s.Client(), Keys: keyspace.MustNew("k")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	start := func(token int64, worker string) Entry {
		t.Helper()
		e, dup, err := h.Started(ctx, 0, token, worker)
		if err != nil || dup {
			t.Fatalf("Started(%d): %v dup=%v", token, err, dup)
		}
		return e
	}
	end := func(token int64, worker string, r Reason) {
		t.Helper()
		if err := h.Ended(ctx, 0, token, worker, r); err != nil {
			t.Fatal(err)
		}
	}
	if e := start(1, "a"); e.PreviousEnded != "" || e.Started.IsZero() || time.Since(e.Started) > time.Minute {
		t.Fatalf("first entry: %+v", e)
	}
	end(1, "a", Released)
	if e := start(2, "b"); e.PreviousEnded != Released || e.Handover < 0 || e.Handover > time.Minute {
		t.Fatalf("after a release: %+v", e)
	}
	if _, dup, err := h.Started(ctx, 0, 2, "b"); err != nil || !dup {
		t.Fatalf("re-sent start: dup=%v err=%v", dup, err)
	}
	// b crashes: no end record; its predecessor's record names token 1.
	if e := start(3, "c"); e.PreviousEnded != LeaseExpired || e.Handover != 0 {
		t.Fatalf("after a crash: %+v", e)
	}
	end(3, "c", SteppedDown)
	start(4, "a")
	end(4, "a", Fenced)
	start(5, "b")

	all, err := h.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.WorkerID+":"+string(e.PreviousEnded))
	}
	if want := "b:fenced a:stepped_down c:lease_expired b:released a:"; strings.Join(got, " ") != want {
		t.Fatalf("history %q, want %q", strings.Join(got, " "), want)
	}
	if all[0].Token != 5 || all[0].PreviousToken != 4 || all[0].PreviousWorkerID != "a" || all[0].Started.Before(all[1].Started) {
		t.Errorf("newest entry: %+v", all[0])
	}
	if two, _ := h.List(ctx, 2); len(two) != 2 || two[0].Token != 5 {
		t.Errorf("List(2) = %+v", two)
	}
}

// TestCapped: the stream is trimmed to about MaxLen entries.
func TestCapped(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	h, err := New(Config{Client: c, Keys: keyspace.MustNew("k"), MaxLen: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(500) {
		if _, _, err := h.Started(t.Context(), 0, i+1, "w"); err != nil {
			t.Fatal(err)
		}
	}
	// MAXLEN ~ trims whole stream nodes (100 entries each by default).
	if n, _ := c.XLen(t.Context(), keyspace.MustNew("k").History()).Result(); n > 200 {
		t.Errorf("stream holds %d entries, want about 10 (at most one node over)", n)
	}
}

// TestPartitionsFollowTheirOwn: in a partitioned fleet each partition's
// leaderships follow one another in one shared stream: a leadership of
// partition 1 does not end partition 0's, and each entry names its
// partition.
func TestPartitionsFollowTheirOwn(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	h, err := New(Config{Client: s.Client(), Keys: keyspace.MustNew("k"), Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	mustStart := func(p int, token int64, worker string) Entry {
		t.Helper()
		e, dup, err := h.Started(ctx, p, token, worker)
		if err != nil || dup {
			t.Fatalf("Started(%d, %d): %v dup=%v", p, token, err, dup)
		}
		return e
	}
	mustStart(0, 1, "a")
	if e := mustStart(1, 1, "b"); e.PreviousEnded != "" {
		t.Fatalf("partition 1's first leadership follows %q", e.PreviousEnded)
	}
	if err := h.Ended(ctx, 0, 1, "a", SteppedDown); err != nil {
		t.Fatal(err)
	}
	if e := mustStart(1, 2, "c"); e.PreviousEnded != LeaseExpired {
		t.Fatalf("partition 1 after b vanished: %q, want lease_expired", e.PreviousEnded)
	}
	if e := mustStart(0, 2, "c"); e.PreviousEnded != SteppedDown {
		t.Fatalf("partition 0 after a stepped down: %q", e.PreviousEnded)
	}
	if _, dup, _ := h.Started(ctx, 1, 2, "c"); !dup {
		t.Fatal("a re-sent start of partition 1 was added again")
	}
	got, err := h.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var parts []int
	for _, e := range got {
		parts = append(parts, e.Partition)
	}
	if want := []int{0, 1, 1, 0}; !slices.Equal(parts, want) {
		t.Fatalf("partitions of the entries, newest first: %v, want %v", parts, want)
	}
	if _, _, err := h.Started(ctx, 4, 1, "x"); err == nil {
		t.Fatal("a partition out of range was accepted")
	}
}

// TestSkipsAreKept: a skip is kept with who, why, which key, job and
// partition, and when (the Redis clock), newest first.
func TestSkipsAreKept(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	h, err := New(Config{Client: s.Client(), Keys: keyspace.MustNew("k"), Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, who := range []string{"lockworker skip (ops@host)", "dashboard (127.0.0.1:5)"} {
		if err := h.Skipped(t.Context(), Skip{Partition: i + 1, Key: "acct", JobID: "J" + who[:4], By: who, Reason: "why " + who}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.Skips(t.Context(), 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("Skips: %+v, %v", got, err)
	}
	if g := got[0]; g.By != "dashboard (127.0.0.1:5)" || g.Reason != "why dashboard (127.0.0.1:5)" || g.Partition != 2 ||
		g.Key != "acct" || g.JobID != "Jdash" || time.Since(g.At) > time.Minute || g.At.Before(got[1].At) {
		t.Fatalf("newest skip %+v (then %+v)", g, got[1])
	}
	if one, err := h.Skips(t.Context(), 1); err != nil || len(one) != 1 || one[0].ID != got[0].ID {
		t.Fatalf("Skips(1): %+v, %v", one, err)
	}
}
