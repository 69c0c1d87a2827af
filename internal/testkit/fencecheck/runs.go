package fencecheck

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// EventKind says what an Event records.
type EventKind string

// The events of a run's log (Store.Events).
const (
	// Began: a run of a job started (the writer's Begin, before its work).
	Began EventKind = "began"
	// Wrote: a run's write reached the store; Event.Accepted says whether
	// the store took it.
	Wrote EventKind = "wrote"
	// Failed: a run ended failing, without a write (its handler failed).
	Failed EventKind = "failed"
	// ParkSeen: the operator saw the job's key parked on the job.
	ParkSeen EventKind = "park-seen"
	// Retried: the operator retried the parked job (fresh attempts).
	Retried EventKind = "retried"
	// Skipped: the operator skipped the parked job (to the dead letters).
	Skipped EventKind = "skipped"
)

// Event is one entry of a store's log, in the order the store saw it.
type Event struct {
	// Order is the event's position in the log, from 0.
	Order int
	At    time.Time
	Kind  EventKind
	// Write is the run's (Began, Wrote, Failed); for the operator's kinds
	// its JobID, Key and Partition name the parked job.
	Write
	// Accepted: a Wrote the store accepted.
	Accepted bool
}

// The kinds of violation only CheckRuns reports.
const (
	KeyOverlap    Kind = "key-overlap"
	KeyEarly      Kind = "key-early"
	ParkBroken    Kind = "park-broken"
	DelayedEarly  Kind = "delayed-early"
	TickDuplicate Kind = "tick-duplicate"
	EnqueuedTwice Kind = "enqueued-twice"
)

// CheckAll is CheckPartitions and CheckRuns over one run: jobs skipped
// by the operator (a Skipped event naming their ID) are excused from
// Lost. Violations come in log order, CheckPartitions' first.
func CheckAll(history []Record, events []Event, jobs []Job, partitions, batch int) []Violation {
	jobs = slices.Clone(jobs)
	seqOf := map[string]int{}
	for seq, j := range jobs {
		if j.ID != "" {
			seqOf[j.ID] = seq
		}
	}
	for _, e := range events {
		if seq, ok := seqOf[e.JobID]; ok && e.Kind == Skipped {
			jobs[seq].Skipped = true
		}
	}
	return append(CheckPartitions(history, jobs, partitions, batch), CheckRuns(events, jobs, partitions)...)
}

// CheckRuns judges a run's log (Store.Events) by what the keys model
// promises of each run of a handler, beyond the effects CheckPartitions
// judges. A group is as CheckPartitions has it (a key; the keyless jobs
// of one partition; else a keyless job alone), and a schedule's ticks
// are ordered by their time. It flags:
//
//   - KeyOverlap: a run began while another run of its group, begun
//     under the same partition and token, had not ended (a Wrote or
//     Failed with its Run). Under one leadership a group runs one job at
//     a time; a run under an older token may still be ending, fenced.
//   - KeyEarly: a run of a job began while an earlier job of its group
//     (enqueue order; for ticks, an earlier tick of the schedule already
//     begun) had no accepted effect and was not skipped.
//   - ParkBroken: the same, while that earlier job was seen parked
//     (ParkSeen) and not yet resolved: retried and then accepted, or
//     skipped.
//   - DelayedEarly: a run of a delayed job began before its DueAt.
//   - TickDuplicate: one tick (schedule and time) with effects of two
//     jobs, or one job's effect accepted twice under one token. A redo
//     under a new token is the at-least-once redo every job may have.
//   - EnqueuedTwice: a job enqueued with an idempotency key whose
//     repeated enqueue answered another ID (Job.Duplicates), or a run of
//     a job with another ID carrying its seq.
//
// Log positions stand in for history positions: a violation's
// Record.Index is its event's Order.
func CheckRuns(events []Event, jobs []Job, partitions int) []Violation {
	c := runCheck{jobs: jobs, partitions: partitions, seqOf: map[string]int{}, local: make([]int, len(jobs)),
		members: map[string][]int{}, open: map[runGroup]map[string]bool{}, state: map[string]*jobState{},
		ticks: map[string][]tick{}, tickJobs: map[tickID]map[string]bool{}, tickDone: map[[2]string]bool{},
		dupSeen: map[string]bool{}}
	for seq, j := range jobs {
		if j.ID != "" {
			c.seqOf[j.ID] = seq
		}
		g := groupName(j, seq, partitions)
		c.local[seq] = len(c.members[g])
		c.members[g] = append(c.members[g], seq)
		for _, id := range j.Duplicates {
			c.flag(EnqueuedTwice, Record{Index: -1, Write: Write{JobID: id, Seq: seq, Key: j.Key}},
				"job %d (idempotency key %q) was enqueued as %s, and again as %s", seq, j.Idempotency, j.ID, id)
		}
	}
	for _, e := range events {
		c.event(e)
	}
	return c.out
}

// runGroup is a group under one leadership: where runs must not overlap.
type runGroup struct {
	part  int
	token int64
	group string
}

// tickID names one tick of a schedule.
type tickID struct {
	schedule string
	at       int64 // UnixNano
}

type tick struct {
	at    time.Time
	jobID string
}

// jobState is what the log has said of one job so far.
type jobState struct {
	done   bool // an accepted effect, or skipped
	parked bool // seen parked and not yet retried or skipped
}

type runCheck struct {
	jobs       []Job
	partitions int
	seqOf      map[string]int   // job ID -> seq
	local      []int            // seq -> place in its group
	members    map[string][]int // group -> seqs in order
	open       map[runGroup]map[string]bool
	state      map[string]*jobState // by job ID
	ticks      map[string][]tick    // schedule -> ticks begun, in order of time
	tickJobs   map[tickID]map[string]bool
	tickDone   map[[2]string]bool // (job ID, token) accepted
	dupSeen    map[string]bool    // job IDs flagged EnqueuedTwice
	out        []Violation
}

func (c *runCheck) flag(k Kind, r Record, format string, args ...any) {
	c.out = append(c.out, Violation{Kind: k, Record: r, Detail: fmt.Sprintf(format, args...)})
}

func (c *runCheck) of(id string) *jobState {
	s := c.state[id]
	if s == nil {
		s = &jobState{}
		c.state[id] = s
	}
	return s
}

// groupOfRun is the group a run's write names: its key, the serial
// queue of a one-partition queue, or its job alone.
func (c *runCheck) groupOfRun(w Write) string {
	switch {
	case w.Key != "":
		return "k:" + w.Key
	case c.partitions <= 1:
		return "s:" + strconv.Itoa(w.Partition)
	}
	return "j:" + w.JobID
}

func (c *runCheck) event(e Event) {
	r := Record{Write: e.Write, Index: e.Order, At: e.At, Accepted: e.Accepted}
	switch e.Kind {
	case ParkSeen:
		s := c.of(e.JobID)
		s.parked, s.done = true, false
		return
	case Retried:
		c.of(e.JobID).parked = false
		return
	case Skipped:
		s := c.of(e.JobID)
		s.parked, s.done = false, true
		return
	}
	seq, known := -1, false
	if e.Schedule == "" && e.Seq >= 0 && e.Seq < len(c.jobs) {
		seq, known = e.Seq, true
		if j := c.jobs[seq]; j.ID != "" && e.JobID != j.ID {
			if j.Idempotency != "" && !c.dupSeen[e.JobID] {
				c.dupSeen[e.JobID] = true
				c.flag(EnqueuedTwice, r, "job %d (idempotency key %q) is %s; %s ran it again", seq, j.Idempotency, j.ID, e.JobID)
			}
			known = false // not the job the enqueuer knows: judged no further
		}
	}
	rg := runGroup{e.Partition, e.Token, c.groupOfRun(e.Write)}
	switch e.Kind {
	case Began:
		if e.Run != "" {
			if len(c.open[rg]) > 0 {
				c.flag(KeyOverlap, r, "group %s: began under partition %d's token %d while %d run(s) of it were in flight",
					rg.group, rg.part, rg.token, len(c.open[rg]))
			}
			if c.open[rg] == nil {
				c.open[rg] = map[string]bool{}
			}
			c.open[rg][e.Run] = true
		}
		switch {
		case known:
			c.beganJob(r, seq)
		case e.Schedule != "":
			c.beganTick(r)
		}
	case Wrote, Failed:
		delete(c.open[rg], e.Run)
		if e.Kind != Wrote || !e.Accepted {
			return
		}
		if known || e.Schedule != "" {
			c.of(e.JobID).done = true
		}
		if e.Schedule != "" {
			c.wroteTick(r)
		}
	}
}

// beganJob judges a run of job seq against its group's earlier jobs and
// its due time.
func (c *runCheck) beganJob(r Record, seq int) {
	j := c.jobs[seq]
	if !j.DueAt.IsZero() && r.At.Before(j.DueAt) {
		c.flag(DelayedEarly, r, "job %d is due at %s, began %s early", seq, j.DueAt.Format(time.RFC3339Nano), j.DueAt.Sub(r.At))
	}
	g := groupName(j, seq, c.partitions)
	for _, prev := range c.members[g][:c.local[seq]] {
		if c.judgeEarlier(r, c.jobs[prev].ID, fmt.Sprintf("job %d", prev), fmt.Sprintf("job %d of group %s", seq, g)) {
			return
		}
	}
}

// judgeEarlier flags the run r (of what) when the earlier job id is
// parked or unfinished; it reports whether it flagged.
func (c *runCheck) judgeEarlier(r Record, id, earlier, what string) bool {
	s := c.state[id]
	switch {
	case s != nil && s.parked:
		c.flag(ParkBroken, r, "%s began while %s was parked", what, earlier)
	case s == nil || !s.done:
		c.flag(KeyEarly, r, "%s began before %s had an effect or was skipped", what, earlier)
	default:
		return false
	}
	return true
}

func (c *runCheck) beganTick(r Record) {
	ts := c.ticks[r.Schedule]
	i, found := slices.BinarySearchFunc(ts, r.ScheduledAt, func(t tick, at time.Time) int { return t.at.Compare(at) })
	if !found {
		c.ticks[r.Schedule] = slices.Insert(ts, i, tick{at: r.ScheduledAt, jobID: r.JobID})
	}
	for _, prev := range ts[:i] {
		if c.judgeEarlier(r, prev.jobID, "its tick "+prev.at.Format(time.RFC3339Nano),
			fmt.Sprintf("schedule %s's tick %s", r.Schedule, r.ScheduledAt.Format(time.RFC3339Nano))) {
			return
		}
	}
}

// wroteTick flags a tick's second job, and one job's effect accepted
// twice under one token.
func (c *runCheck) wroteTick(r Record) {
	id := tickID{r.Schedule, r.ScheduledAt.UnixNano()}
	jobsOf := c.tickJobs[id]
	if jobsOf == nil {
		jobsOf = map[string]bool{}
		c.tickJobs[id] = jobsOf
	}
	if !jobsOf[r.JobID] && len(jobsOf) > 0 {
		c.flag(TickDuplicate, r, "schedule %s's tick %s already ran as another job", r.Schedule, r.ScheduledAt.Format(time.RFC3339Nano))
	}
	jobsOf[r.JobID] = true
	done := [2]string{r.JobID, strconv.FormatInt(r.Token, 10)}
	if c.tickDone[done] {
		c.flag(TickDuplicate, r, "schedule %s's tick %s accepted twice under token %d", r.Schedule, r.ScheduledAt.Format(time.RFC3339Nano), r.Token)
	}
	c.tickDone[done] = true
}
