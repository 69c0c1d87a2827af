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
//   - an idle lane contends when its partition is this replica's, or has
//     had no owner for FreeGrace;
//   - a contending lane stops when its partition is another's and has an
//     owner or a recent one;
//   - an owned partition that is another's goes over once that member
//     waits for it, at most MaxMoves at a time.
func (p *planner) plan() Status {
	now := p.cfg.Now()
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
	members := []Member{self}
	contends := map[string]map[int]bool{}
	owned := make([]bool, len(p.cfg.Lanes))
	for i := range self.Owned {
		owned[i] = true
	}
	for id, s := range p.others {
		m := s.m
		for part := range m.Owned {
			if part >= 0 && part < len(owned) {
				owned[part] = true
			}
		}
		contends[id] = map[int]bool{}
		for _, part := range s.m.Contending {
			contends[id][part] = true
		}
		if len(m.Owned) == 0 && now.Sub(s.since) < p.cfg.Settle {
			continue // not settled: nothing is handed to it yet
		}
		members = append(members, m)
	}
	a := Assign(len(p.cfg.Lanes), members)

	var surplus []int
	for i, l := range p.cfg.Lanes {
		if owned[i] {
			delete(p.freeSince, i)
		} else if _, ok := p.freeSince[i]; !ok {
			p.freeSince[i] = now
		}
		mine := a.Owner[i] == p.cfg.Self
		orphan := !owned[i] && now.Sub(p.freeSince[i]) >= p.cfg.FreeGrace && !l.Avoiding()
		switch l.Phase() {
		case Idle:
			if mine || orphan {
				l.Contend()
			}
		case Contending:
			if !mine && !orphan {
				l.Leave()
			}
		case Owning:
			if !mine && contends[a.Owner[i]][i] {
				surplus = append(surplus, i)
			}
		}
	}
	// Hand over the partitions this replica ranks lowest first.
	slices.SortFunc(surplus, func(x, y int) int { return cmp.Compare(score(p.cfg.Self, x), score(p.cfg.Self, y)) })
	for _, i := range surplus {
		if moving >= p.cfg.MaxMoves {
			break
		}
		p.cfg.Lanes[i].Leave()
		p.handing[i] = true
		moving++
	}
	return Status{Quota: a.Quota, Owner: a.Owner, Moving: moving, Planned: now}
}
