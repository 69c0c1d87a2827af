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
// member, IDs unique), in four steps every replica takes alike:
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
	a := Assignment{Owner: make([]string, n), Quota: make(map[string]int, len(ms))}
	if len(ms) == 0 || n <= 0 {
		return a
	}

	current := make([]string, n) // step 1
	best := make([]int64, n)
	owns := make(map[string][]int, len(ms))
	for _, m := range ms {
		for p, token := range m.Owned {
			if p < 0 || p >= n {
				continue
			}
			if current[p] == "" || token > best[p] || token == best[p] && m.ID < current[p] {
				current[p], best[p] = m.ID, token
			}
		}
	}
	for p, id := range current {
		if id != "" {
			owns[id] = append(owns[id], p)
		}
	}

	byClaim := slices.Clone(ms) // step 2
	slices.SortFunc(byClaim, func(x, y Member) int {
		if c := cmp.Compare(len(owns[y.ID]), len(owns[x.ID])); c != 0 {
			return c
		}
		return cmp.Compare(xxhash.Sum64String(y.ID), xxhash.Sum64String(x.ID))
	})
	for i, m := range byClaim {
		a.Quota[m.ID] = n / len(ms)
		if i < n%len(ms) {
			a.Quota[m.ID]++
		}
	}

	avoids := make(map[string]map[int]bool, len(ms))
	for _, m := range ms {
		avoids[m.ID] = make(map[int]bool, len(m.Avoiding))
		for _, p := range m.Avoiding {
			avoids[m.ID][p] = true
		}
	}
	room := make(map[string]int, len(ms)) // step 3
	for _, m := range ms {
		ps := slices.DeleteFunc(owns[m.ID], func(p int) bool { return avoids[m.ID][p] })
		slices.SortFunc(ps, func(x, y int) int { return cmp.Compare(score(m.ID, y), score(m.ID, x)) })
		keep := min(len(ps), a.Quota[m.ID])
		for _, p := range ps[:keep] {
			a.Owner[p] = m.ID
		}
		room[m.ID] = a.Quota[m.ID] - keep
	}

	type pair struct { // step 4
		score uint64
		p     int
		id    string
	}
	var pairs []pair
	for p, id := range a.Owner {
		if id != "" {
			continue
		}
		for _, m := range ms {
			if room[m.ID] > 0 && !avoids[m.ID][p] {
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
		if a.Owner[x.p] == "" && room[x.id] > 0 {
			a.Owner[x.p] = x.id
			room[x.id]--
		}
	}
	for p, id := range a.Owner { // step 5
		if id != "" {
			continue
		}
		var best uint64
		for _, m := range ms {
			if s := score(m.ID, p); !avoids[m.ID][p] && (a.Owner[p] == "" || s > best) {
				a.Owner[p], best = m.ID, s
			}
		}
		if a.Owner[p] != "" {
			a.Quota[a.Owner[p]]++
			for _, m := range ms { // the room it leaves unfilled
				if room[m.ID] > 0 && avoids[m.ID][p] {
					room[m.ID]--
					a.Quota[m.ID]--
					break
				}
			}
		}
	}
	return a
}

// score ranks partition p for member id: rendezvous hashing's weight.
func score(id string, p int) uint64 {
	return xxhash.Sum64String(id + "\x00" + strconv.Itoa(p))
}
