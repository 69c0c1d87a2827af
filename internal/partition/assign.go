package partition

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Member is a replica that may own partitions, as the fleet registry (or,
// for this replica, its own lanes) shows it.
type Member struct {
	// ID is the worker ID.
	ID string
	// Owned maps each partition the member holds to the fencing token it
	// holds it with. When two members claim one partition (a record not yet
	// refreshed after a handover), the higher token is the owner.
	Owned map[int]int64
	// Contending lists the partitions the member waits for (its chart in
	// waiting_to_acquire_lock or acquiring_lock): an owner hands a
	// partition over only to a member that waits for it, so the handover
	// takes milliseconds. Assign does not read it.
	Contending []int
	// Avoiding lists the partitions the member must not be given (it
	// stepped down from them on an operator's request, for a while).
	Avoiding []int
}

// Assignment is who should own each partition.
type Assignment struct {
	// Owner is the member each partition should belong to, by partition.
	Owner []string
	// Quota is how many partitions each member is given: balanced to one,
	// but where a member avoids partitions the others take them.
	Quota map[string]int
}

// Assign computes the owners of n partitions among members (at least one
// member, IDs unique), in five steps every replica takes alike:
//
//  1. Each partition's current owner is the member that holds it with the
//     highest token.
//  2. Quotas: n / len(members) each, and one more for n % len(members) of
//     them: those that own the most now (so a settled fleet keeps its
//     counts), ties broken by a hash of the ID.
//  3. Each member keeps the partitions it owns, up to its quota, its
//     highest-scored first (score: a hash of the member and the partition),
//     but for those it avoids.
//  4. The partitions nobody kept go to the members below their quota,
//     highest score first (rendezvous hashing with capacities), none to a
//     member that avoids it.
//  5. A partition every member with room avoids goes, over quota, to the
//     highest-scored member that does not avoid it (none, when all do).
func Assign(n int, members []Member) Assignment {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	as := &assigner{n: n, ms: ms, a: Assignment{Owner: make([]string, n), Quota: make(map[string]int, len(ms))}}
	if len(ms) == 0 || n <= 0 {
		return as.a
	}
	as.currentOwners()
	as.quotas()
	as.avoidances()
	as.keep()
	as.fill()
	as.overflow()
	return as.a
}

// assigner is Assign's working state.
type assigner struct {
	n      int
	ms     []Member // by ID
	a      Assignment
	owns   map[string][]int        // member -> the partitions it owns now (step 1)
	avoids map[string]map[int]bool // member -> the partitions it avoids
	room   map[string]int          // member -> quota left after keeping (step 3)
}

// currentOwners is step 1.
func (as *assigner) currentOwners() {
	current := make([]string, as.n)
	best := make([]int64, as.n)
	for _, m := range as.ms {
		for p, token := range m.Owned {
			if p < 0 || p >= as.n {
				continue
			}
			if current[p] == "" || token > best[p] || token == best[p] && m.ID < current[p] {
				current[p], best[p] = m.ID, token
			}
		}
	}
	as.owns = make(map[string][]int, len(as.ms))
	for p, id := range current {
		if id != "" {
			as.owns[id] = append(as.owns[id], p)
		}
	}
}

// quotas is step 2.
func (as *assigner) quotas() {
	byClaim := slices.Clone(as.ms)
	slices.SortFunc(byClaim, func(x, y Member) int {
		if c := cmp.Compare(len(as.owns[y.ID]), len(as.owns[x.ID])); c != 0 {
			return c
		}
		return cmp.Compare(xxhash.Sum64String(y.ID), xxhash.Sum64String(x.ID))
	})
	for i, m := range byClaim {
		as.a.Quota[m.ID] = as.n / len(as.ms)
		if i < as.n%len(as.ms) {
			as.a.Quota[m.ID]++
		}
	}
}

func (as *assigner) avoidances() {
	as.avoids = make(map[string]map[int]bool, len(as.ms))
	for _, m := range as.ms {
		as.avoids[m.ID] = make(map[int]bool, len(m.Avoiding))
		for _, p := range m.Avoiding {
			as.avoids[m.ID][p] = true
		}
	}
}

// keep is step 3.
func (as *assigner) keep() {
	as.room = make(map[string]int, len(as.ms))
	for _, m := range as.ms {
		ps := slices.DeleteFunc(as.owns[m.ID], func(p int) bool { return as.avoids[m.ID][p] })
		slices.SortFunc(ps, func(x, y int) int { return cmp.Compare(score(m.ID, y), score(m.ID, x)) })
		kept := min(len(ps), as.a.Quota[m.ID])
		for _, p := range ps[:kept] {
			as.a.Owner[p] = m.ID
		}
		as.room[m.ID] = as.a.Quota[m.ID] - kept
	}
}

// fill is step 4.
func (as *assigner) fill() {
	type pair struct {
		score uint64
		p     int
		id    string
	}
	var pairs []pair
	for p, id := range as.a.Owner {
		if id != "" {
			continue
		}
		for _, m := range as.ms {
			if as.room[m.ID] > 0 && !as.avoids[m.ID][p] {
				pairs = append(pairs, pair{score(m.ID, p), p, m.ID})
			}
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		if c := cmp.Compare(x.p, y.p); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	for _, x := range pairs {
		if as.a.Owner[x.p] == "" && as.room[x.id] > 0 {
			as.a.Owner[x.p] = x.id
			as.room[x.id]--
		}
	}
}

// overflow is step 5.
func (as *assigner) overflow() {
	for p, id := range as.a.Owner {
		if id != "" {
			continue
		}
		var best uint64
		for _, m := range as.ms {
			if s := score(m.ID, p); !as.avoids[m.ID][p] && (as.a.Owner[p] == "" || s > best) {
				as.a.Owner[p], best = m.ID, s
			}
		}
		if as.a.Owner[p] != "" {
			as.a.Quota[as.a.Owner[p]]++
			as.unfill(p)
		}
	}
}

// unfill takes back a quota place that avoiding p left unfilled: the
// first member with room that avoids p gives it to p's owner.
func (as *assigner) unfill(p int) {
	for _, m := range as.ms {
		if as.room[m.ID] > 0 && as.avoids[m.ID][p] {
			as.room[m.ID]--
			as.a.Quota[m.ID]--
			return
		}
	}
}

// score ranks partition p for member id: rendezvous hashing's weight.
func score(id string, p int) uint64 {
	return xxhash.Sum64String(id + "\x00" + strconv.Itoa(p))
}
