package partition

import (
	"cmp"
	"slices"
	"time"
)

// planner is the coordinator's state and decisions, apart from its
// goroutine so tests can drive it step by step.
type planner struct {
	cfg       CoordinatorConfig
	others    map[string]*seen // the last registry read, this replica aside
	freeSince map[int]time.Time
	handing   map[int]bool // lanes this replica asked to hand over
}

// seen is a member of the last registry read.
type seen struct {
	m     Member
	since time.Time // first read live (this replica's clock)
}

func newPlanner(cfg CoordinatorConfig) *planner {
	return &planner{cfg: cfg, others: map[string]*seen{}, freeSince: map[int]time.Time{}, handing: map[int]bool{}}
}

// members takes a registry read.
func (p *planner) members(ms []Member) {
	now := p.cfg.Now()
	next := make(map[string]*seen, len(ms))
	for _, m := range ms {
		if m.ID == p.cfg.Self {
			continue
		}
		s := p.others[m.ID]
		if s == nil {
			s = &seen{since: now}
		}
		s.m = m
		next[m.ID] = s
	}
	p.others = next
}

// plan computes the assignment over the members it sees and moves this
// replica's lanes towards it:
//
//   - an idle lane contends when its partition is this replica's, has had
//     no owner for FreeGrace, or this replica is a spare (Assign gave it
//     no partition: the fleet has more settled members than partitions)
//     and stands by for every partition; with one partition, every
//     replica but its owner is a spare, so every replica contends, as a
//     lock's followers do;
//   - a contending lane stops when none of that holds;
//   - an owned partition that is another's goes over once that member
//     waits for it, at most MaxMoves at a time.
func (p *planner) plan() Status {
	now := p.cfg.Now()
	self, moving := p.self()
	v := p.view(self, now)
	a := Assign(len(p.cfg.Lanes), v.members)
	spare := a.Quota[p.cfg.Self] == 0
	var surplus []int
	for i, l := range p.cfg.Lanes {
		p.noteFree(i, v.owned[i], now)
		orphan := !v.owned[i] && now.Sub(p.freeSince[i]) >= p.cfg.FreeGrace && !l.Avoiding()
		if steer(l, a.Owner[i] == p.cfg.Self, orphan || spare, v.contends[a.Owner[i]][i]) {
			surplus = append(surplus, i)
		}
	}
	moving = p.handOver(surplus, moving)
	return Status{Quota: a.Quota, Owner: a.Owner, Moving: moving, Planned: now}
}

// steer moves one lane: an idle lane contends when its partition is mine
// or it may stand by; a contending one stops when neither holds. It
// reports an owned partition that is another's who waits for it: one to
// hand over.
func steer(l Lane, mine, standBy, awaited bool) (surplus bool) {
	switch l.Phase() {
	case Idle:
		if mine || standBy {
			l.Contend()
		}
	case Contending:
		if !mine && !standBy {
			l.Leave()
		}
	case Owning:
		return !mine && awaited
	}
	return false
}

// self is this replica as its lanes show it, and how many of its
// handovers are in flight.
func (p *planner) self() (Member, int) {
	self := Member{ID: p.cfg.Self, Owned: map[int]int64{}}
	moving := 0
	for i, l := range p.cfg.Lanes {
		if l.Avoiding() {
			self.Avoiding = append(self.Avoiding, i)
		}
		switch ph := l.Phase(); {
		case ph == Owning:
			self.Owned[i] = l.Token()
		case ph == Leaving && p.handing[i]:
			moving++
		case ph == Idle:
			delete(p.handing, i)
		}
	}
	return self, moving
}

// view is what a plan reads of the fleet: the members Assign counts
// (this replica, and the others that own something or have settled),
// which partitions each other member waits for, and which have an owner.
type view struct {
	members  []Member
	contends map[string]map[int]bool
	owned    []bool
}

func (p *planner) view(self Member, now time.Time) view {
	v := view{members: []Member{self}, contends: map[string]map[int]bool{}, owned: make([]bool, len(p.cfg.Lanes))}
	for i := range self.Owned {
		v.owned[i] = true
	}
	for id, s := range p.others {
		for part := range s.m.Owned {
			if part >= 0 && part < len(v.owned) {
				v.owned[part] = true
			}
		}
		v.contends[id] = map[int]bool{}
		for _, part := range s.m.Contending {
			v.contends[id][part] = true
		}
		if len(s.m.Owned) == 0 && now.Sub(s.since) < p.cfg.Settle {
			continue // not settled: nothing is handed to it yet
		}
		v.members = append(v.members, s.m)
	}
	return v
}

// noteFree keeps since when partition i has had no owner.
func (p *planner) noteFree(i int, owned bool, now time.Time) {
	if owned {
		delete(p.freeSince, i)
	} else if _, ok := p.freeSince[i]; !ok {
		p.freeSince[i] = now
	}
}

// handOver hands the surplus partitions over, those this replica ranks
// lowest first, while fewer than MaxMoves are in flight, and returns how
// many are.
func (p *planner) handOver(surplus []int, moving int) int {
	slices.SortFunc(surplus, func(x, y int) int { return cmp.Compare(score(p.cfg.Self, x), score(p.cfg.Self, y)) })
	for _, i := range surplus {
		if moving >= p.cfg.MaxMoves {
			break
		}
		p.cfg.Lanes[i].Leave()
		p.handing[i] = true
		moving++
	}
	return moving
}
