package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("01JW%06dQZ", i*7919)
	}
	return out
}

// settle applies an assignment as the members' ownership, tokens all 1.
func settle(a Assignment, members []string) []Member {
	out := make([]Member, len(members))
	for i, id := range members {
		out[i] = Member{ID: id, Owned: map[int]int64{}}
		for p, o := range a.Owner {
			if o == id {
				out[i].Owned[p] = 1
			}
		}
	}
	return out
}

func fresh(members []string) []Member {
	out := make([]Member, len(members))
	for i, id := range members {
		out[i] = Member{ID: id}
	}
	return out
}

func counts(a Assignment) map[string]int {
	c := map[string]int{}
	for _, o := range a.Owner {
		c[o]++
	}
	return c
}

func checkBalanced(t *testing.T, a Assignment, members []string) {
	t.Helper()
	c := counts(a)
	lo, hi := len(a.Owner), 0
	for _, id := range members {
		lo, hi = min(lo, c[id]), max(hi, c[id])
		if c[id] != a.Quota[id] {
			t.Fatalf("%s owns %d, quota %d", id, c[id], a.Quota[id])
		}
	}
	if c[""] != 0 {
		t.Fatalf("%d partitions without an owner", c[""])
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d partitions per member", lo, hi)
	}
}

func moved(a, b Assignment) int {
	n := 0
	for p := range a.Owner {
		if a.Owner[p] != b.Owner[p] {
			n++
		}
	}
	return n
}

func TestAssignBalancedAndDeterministic(t *testing.T) {
	for _, n := range []int{1, 2, 7, 8, 16, 64, 1024} {
		for _, r := range []int{1, 2, 3, 5, 10, 40} {
			members := ids(r)
			a := Assign(n, fresh(members))
			checkBalanced(t, a, members)
			shuffled := fresh(members)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if b := Assign(n, shuffled); !slices.Equal(a.Owner, b.Owner) {
				t.Fatalf("n=%d r=%d: the members' order changed the owners", n, r)
			}
			// A settled fleet is a fixed point: nothing moves.
			if b := Assign(n, settle(a, members)); moved(a, b) != 0 {
				t.Fatalf("n=%d r=%d: %d partitions move in a settled fleet", n, r, moved(a, b))
			}
		}
	}
}

// A member that joins takes only its quota; one that leaves gives up only
// its own partitions, and nothing else moves.
func TestAssignMovesMinimal(t *testing.T) {
	for _, n := range []int{8, 16, 64, 1024} {
		for _, r := range []int{1, 2, 3, 5, 10} {
			members := ids(r + 1)
			old, joiner := members[:r], members[r]
			before := Assign(n, settle(Assign(n, fresh(old)), old))
			after := Assign(n, append(settle(before, old), Member{ID: joiner}))
			checkBalanced(t, after, members)
			if got, want := moved(before, after), after.Quota[joiner]; got != want {
				t.Errorf("n=%d r=%d: a join moved %d partitions, want the joiner's quota %d", n, r, got, want)
			}
			for p := range after.Owner {
				if after.Owner[p] != before.Owner[p] && after.Owner[p] != joiner {
					t.Fatalf("n=%d r=%d: partition %d moved between old members", n, r, p)
				}
			}

			if r == 1 {
				continue
			}
			leaver := old[0]
			rest := settle(before, old)[1:]
			left := Assign(n, rest)
			checkBalanced(t, left, old[1:])
			for p := range left.Owner {
				if before.Owner[p] != leaver && left.Owner[p] != before.Owner[p] {
					t.Fatalf("n=%d r=%d: partition %d of %s moved when %s left", n, r, p, before.Owner[p], leaver)
				}
			}
		}
	}
}

// Stale records (a handover not yet seen) claim one partition twice: the
// higher token owns it.
func TestAssignHigherTokenOwns(t *testing.T) {
	a := Assign(2, []Member{
		{ID: "a", Owned: map[int]int64{0: 7, 1: 3}},
		{ID: "b", Owned: map[int]int64{1: 4}},
	})
	if a.Owner[0] != "a" || a.Owner[1] != "b" {
		t.Fatalf("owners %v, want [a b]", a.Owner)
	}
}

// Whatever the members claim (stale, conflicting, out of range), the
// result is balanced and complete.
func TestAssignAnyClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n, r := 1+rng.IntN(70), 1+rng.IntN(9)
		members := ids(r)
		ms := fresh(members)
		for i := range ms {
			ms[i].Owned = map[int]int64{}
			for range rng.IntN(n + 3) {
				ms[i].Owned[rng.IntN(n+2)-1] = int64(rng.IntN(5))
			}
		}
		checkBalanced(t, Assign(n, ms), members)
	}
}

func TestOfIsXXH64(t *testing.T) {
	// XXH64 test vectors: "" is 0xef46db3751d8e999, "abc" 0x44bc2cf5ad770999.
	for _, c := range []struct {
		key  string
		n    int
		want int
	}{
		{"", 1 << 20, int(uint64(0xef46db3751d8e999) % (1 << 20))},
		{"abc", 1000, int(uint64(0x44bc2cf5ad770999) % 1000)},
		{"abc", 1, 0},
	} {
		if got := Of(c.key, c.n); got != c.want {
			t.Errorf("Of(%q, %d) = %d, want %d", c.key, c.n, got, c.want)
		}
	}
}

// A member never gets a partition it avoids, nor keeps one; one that
// every member with room avoids stays without an owner.
func TestAssignAvoids(t *testing.T) {
	a := Assign(4, []Member{
		{ID: "a", Owned: map[int]int64{0: 1, 1: 1}, Avoiding: []int{0}},
		{ID: "b", Owned: map[int]int64{2: 1, 3: 1}},
	})
	if a.Owner[0] != "b" || a.Owner[1] != "a" {
		t.Fatalf("owners %v: want 0 moved to b, 1 kept by a", a.Owner)
	}
	if c := counts(a); c["a"] != a.Quota["a"] || c["b"] != a.Quota["b"] || c[""] != 0 {
		t.Fatalf("counts %v, quotas %v: every partition owned, as the quotas say", c, a.Quota)
	}
	alone := Assign(2, []Member{{ID: "a", Avoiding: []int{1}}})
	if alone.Owner[0] != "a" || alone.Owner[1] != "" {
		t.Fatalf("owners %v, want [a \"\"]", alone.Owner)
	}
}
