package fencecheck_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/lockworker/lockworker/internal/testkit/fencecheck"
)

// w is a write by worker "w<token>" of job "j<seq>", the usual case.
func w(token int64, seq int) fencecheck.Write {
	return fencecheck.Write{Worker: "w" + string(rune('0'+token)), Token: token, JobID: "j" + string(rune('a'+seq)), Seq: seq}
}

// history runs writes through a store and returns what it recorded.
func history(fenced bool, ws ...fencecheck.Write) []fencecheck.Record {
	s := fencecheck.NewStore(fencecheck.Config{Unfenced: !fenced})
	for _, x := range ws {
		s.Write(x)
	}
	return s.History()
}

func kinds(vs []fencecheck.Violation) []fencecheck.Kind {
	var out []fencecheck.Kind
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestStoreRejectsOlderTokens(t *testing.T) {
	s := fencecheck.NewStore(fencecheck.Config{})
	for _, c := range []struct {
		w    fencecheck.Write
		want bool
	}{
		{w(2, 0), true},
		{w(2, 1), true}, // the same leadership again
		{w(1, 2), false},
		{w(3, 2), true},
		{w(2, 3), false},
	} {
		if got := s.Write(c.w).Accepted; got != c.want {
			t.Fatalf("write %+v accepted=%v, want %v", c.w, got, c.want)
		}
	}
	if a, r := s.Counts(); a != 3 || r != 2 {
		t.Fatalf("counts = %d accepted, %d rejected; want 3, 2", a, r)
	}
	if last, _ := s.Last(); last.Token != 3 || last.Seq != 2 {
		t.Fatalf("last accepted = %+v", last)
	}
	h := s.History()
	if len(h) != 5 || h[2].Accepted || h[2].Highest != 2 || h[4].Index != 4 {
		t.Fatalf("history = %+v", h)
	}
}

func TestUnfencedStoreAcceptsEverything(t *testing.T) {
	s := fencecheck.NewStore(fencecheck.Config{Unfenced: true})
	s.Write(w(5, 0))
	if !s.Write(w(1, 1)).Accepted {
		t.Fatal("unfenced store rejected a write")
	}
}

func TestCheck(t *testing.T) {
	other := func(x fencecheck.Write, worker string) fencecheck.Write { x.Worker = worker; return x }
	renamed := w(1, 1)
	renamed.JobID = "other"
	for _, c := range []struct {
		name   string
		fenced bool
		jobs   int
		writes []fencecheck.Write
		want   []fencecheck.Kind
	}{
		{"one leader", true, 3, []fencecheck.Write{w(1, 0), w(1, 1), w(1, 2)}, nil},
		{"handover", true, 3, []fencecheck.Write{w(1, 0), w(3, 1), w(3, 2)}, nil},
		{"redo of the last job by the next leader", true, 3, []fencecheck.Write{w(1, 0), w(1, 1), w(2, 1), w(2, 2)}, nil},
		{"stale write rejected", true, 2, []fencecheck.Write{w(1, 0), w(2, 0), w(1, 1), w(2, 1)}, nil},
		{"stale write accepted: interleaved leaders", false, 2, []fencecheck.Write{w(1, 0), w(2, 0), w(1, 1), w(2, 1)},
			[]fencecheck.Kind{fencecheck.TokenDecreased}},
		{"paused leader writes late", false, 3, []fencecheck.Write{w(1, 0), w(2, 0), w(2, 1), w(2, 2), w(1, 0)},
			[]fencecheck.Kind{fencecheck.TokenDecreased}},
		{"token reused by another worker", true, 2, []fencecheck.Write{w(1, 0), other(w(1, 1), "intruder")},
			[]fencecheck.Kind{fencecheck.TokenReused}},
		{"same token twice for a job", true, 2, []fencecheck.Write{w(1, 0), w(1, 0), w(1, 1)},
			[]fencecheck.Kind{fencecheck.Duplicated}},
		{"gap", true, 3, []fencecheck.Write{w(1, 0), w(1, 2)}, []fencecheck.Kind{fencecheck.Lost}},
		{"missing tail", true, 3, []fencecheck.Write{w(1, 0), w(1, 1)}, []fencecheck.Kind{fencecheck.Lost}},
		{"nothing at all", true, 1, nil, []fencecheck.Kind{fencecheck.Lost}},
		{"first job skipped", true, 2, []fencecheck.Write{w(1, 1)}, []fencecheck.Kind{fencecheck.Lost}},
		{"job again in one leadership", true, 3, []fencecheck.Write{w(1, 0), w(1, 1), w(1, 2), w(1, 1)},
			[]fencecheck.Kind{fencecheck.Duplicated}},
		{"new leader starts over", true, 3, []fencecheck.Write{w(1, 0), w(1, 1), w(1, 2), w(2, 0)},
			[]fencecheck.Kind{fencecheck.Reordered}},
		// Reported once: the redo then goes on in order from where it
		// (wrongly) started.
		{"new leader redoes two jobs", true, 3, []fencecheck.Write{w(1, 0), w(1, 1), w(1, 2), w(2, 1), w(2, 2)},
			[]fencecheck.Kind{fencecheck.Reordered}},
		{"swapped jobs", true, 3, []fencecheck.Write{w(1, 0), w(1, 2), w(1, 1)},
			[]fencecheck.Kind{fencecheck.Lost, fencecheck.Reordered}},
		{"seq out of range", true, 1, []fencecheck.Write{w(1, 0), w(1, 1)}, []fencecheck.Kind{fencecheck.Mismatch}},
		{"one seq, two job IDs", true, 2, []fencecheck.Write{w(1, 0), renamed, w(2, 1)}, []fencecheck.Kind{fencecheck.Mismatch}},
		{"rejected writes still count for token ownership", true, 2,
			[]fencecheck.Write{w(2, 0), other(w(1, 0), "a"), other(w(1, 1), "b"), w(2, 1)},
			[]fencecheck.Kind{fencecheck.TokenReused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := fencecheck.Check(history(c.fenced, c.writes...), c.jobs)
			if got := kinds(vs); !slices.Equal(got, c.want) {
				t.Fatalf("violations = %v, want %v\n%v", got, c.want, vs)
			}
			for _, v := range vs {
				if v.Error() == "" {
					t.Fatal("empty message")
				}
			}
		})
	}
}

// With batches (group commit) a new leader may redo its predecessor's
// last batch, in order; anything else is still a violation.
func TestCheckBatch(t *testing.T) {
	seqs := func(token int64, from, to int) []fencecheck.Write {
		var out []fencecheck.Write
		for i := from; i <= to; i++ {
			out = append(out, w(token, i))
		}
		return out
	}
	cat := func(parts ...[]fencecheck.Write) []fencecheck.Write { return slices.Concat(parts...) }
	for _, c := range []struct {
		name   string
		fenced bool
		batch  int
		writes []fencecheck.Write
		want   []fencecheck.Kind
	}{
		{"lost batch redone", true, 4, cat(seqs(1, 0, 5), seqs(2, 2, 9)), nil},
		{"lost batch redone, then another", true, 4, cat(seqs(1, 0, 5), seqs(2, 3, 6), seqs(3, 4, 9)), nil},
		{"one job redone, as without batches", true, 4, cat(seqs(1, 0, 5), seqs(2, 5, 9)), nil},
		{"handover without redo", true, 4, cat(seqs(1, 0, 5), seqs(2, 6, 9)), nil},
		{"redo reaching past the last batch", true, 4, cat(seqs(1, 0, 5), seqs(2, 1, 9)),
			[]fencecheck.Kind{fencecheck.Reordered}},
		{"the same redo without batches", true, 1, cat(seqs(1, 0, 5), seqs(2, 2, 9)),
			[]fencecheck.Kind{fencecheck.Reordered}},
		{"a job skipped in the redo", true, 4, cat(seqs(1, 0, 5), seqs(2, 3, 3), seqs(2, 5, 9)),
			[]fencecheck.Kind{fencecheck.Reordered}},
		{"redo under the same token", true, 4, cat(seqs(1, 0, 5), seqs(1, 4, 9)),
			[]fencecheck.Kind{fencecheck.Duplicated, fencecheck.Duplicated}},
		{"a batch's job lost", true, 4, cat(seqs(1, 0, 3), seqs(1, 5, 9)), []fencecheck.Kind{fencecheck.Lost}},
		{"stale batch accepted after the redo", false, 4, cat(seqs(1, 0, 3), seqs(2, 2, 5), seqs(1, 4, 5), seqs(2, 6, 9)),
			[]fencecheck.Kind{fencecheck.TokenDecreased, fencecheck.TokenDecreased}},
		{"stale batch rejected", true, 4, cat(seqs(1, 0, 3), seqs(2, 2, 5), seqs(1, 4, 5), seqs(2, 6, 9)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := fencecheck.CheckBatch(history(c.fenced, c.writes...), 10, c.batch)
			if got := kinds(vs); !slices.Equal(got, c.want) {
				t.Fatalf("violations = %v, want %v\n%v", got, c.want, vs)
			}
		})
	}
}

func TestHandlerAndPost(t *testing.T) {
	s := fencecheck.NewStore(fencecheck.Config{})
	srv := httptest.NewServer(fencecheck.Handler(s))
	defer srv.Close()
	c := srv.Client()
	if err := fencecheck.Post(t.Context(), c, srv.URL, w(2, 0)); err != nil {
		t.Fatal(err)
	}
	if err := fencecheck.Post(t.Context(), c, srv.URL, w(1, 1)); !errors.Is(err, fencecheck.ErrStale) {
		t.Fatalf("stale post: %v, want ErrStale", err)
	}
	resp, err := c.Post(srv.URL+"/write", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty body: %s", resp.Status)
	}
	if a, r := s.Counts(); a != 1 || r != 1 {
		t.Fatalf("counts = %d, %d", a, r)
	}
}
