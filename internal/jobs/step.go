package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/scriptpipe"
)

// ending is what becomes of a group when its run ends: step.lua's end
// codes.
type ending byte

const (
	endDone        ending = 'd' // done, cut or given back: ready again (at due, if set)
	endRetry       ending = 'r' // the head failed: ready again at due
	endPark        ending = 'p' // the head failed for good: the group is parked
	endInterrupted ending = 'i' // the head was interrupted: one delivery counted
	endStale       ending = 's' // the head's store said "stale token": given back uncounted
)

func (e ending) String() string {
	switch e {
	case endDone:
		return "done"
	case endRetry:
		return "retry"
	case endPark:
		return "park"
	case endInterrupted:
		return "interrupted"
	case endStale:
		return "stale"
	}
	return "ending(" + strconv.Itoa(int(e)) + ")"
}

// staleLeaderships is how many leaderships in a row may meet a "stale
// token" answer on one job before its group is parked: the store keeps
// rejecting every new token (its fence is above the epoch: a restored
// backup, a Redis that lost its data), and moving the partition on would
// go on forever.
const staleLeaderships = 3

// deadJob is a job of a run that is dead-lettered: its index among the
// run's finished jobs, its deliveries and why.
type deadJob struct {
	index    int
	attempts int
	cause    string
}

// outcome is how a run ended, as a step records it: popped jobs at the
// head of the group finished (dead among them dead-lettered, the rest
// committed), then the end. head is the group's head after them (the job
// the end is about: retried, parked, interrupted, stale).
type outcome struct {
	member string
	first  string // the run's first job ID: the claim it answers
	popped int
	dead   []deadJob
	// last is the last committed job and its deliveries (for J:last).
	last         string
	lastAttempts int
	end          ending
	head         string
	attempts     int       // endRetry, endPark: the head's deliveries so far
	due          time.Time // endDone (zero: at once), endRetry
	cause        string    // endPark: why; endStale: why, should it park
	uncount      bool      // popped 0: the head's counted delivery is taken back
	// idem are the idempotency keys of the popped jobs that carry one,
	// with their jobs' IDs: they expire Config.IdempotencyTTL from now.
	idem []idemRef
}

// idemRef is an idempotency key and the ID of the job it was given to.
type idemRef struct{ key, id string }

// ticks is what a step enqueues for one schedule: its ticks, in order,
// and its next tick, applied only while its next tick is still seen.
type ticks struct {
	name string
	seen time.Time // the next tick the step that named it read
	next time.Time // zero: it never ticks again
	jobs []tickJob
}

// tickJob is one tick's job: the tick's time, its group, its entry.
type tickJob struct {
	at     time.Time
	member string
	entry  string
}

// dueSchedule is a schedule a step found due: its spec as stored, its
// next tick and its last (zero before the first).
type dueSchedule struct {
	name string
	spec string
	next time.Time
	last time.Time
}

// claim is a run a step handed out: a group's first jobs, in order, the
// first delivered for its Attempt-th time, the others for the first.
type claim struct {
	member string
	jobs   []Job
}

// stepReply is step.lua's reply, decoded in one place (parseStep).
type stepReply struct {
	// applied says, outcome by outcome, whether it was recorded; false
	// when the group's claim was no longer this leadership's for that run
	// (a resent step; a claim released meanwhile).
	applied []bool
	// paused: the queue is paused, nothing was claimed.
	paused bool
	// readyNow is how many groups may still run now.
	readyNow int
	// nextDue is the earliest later time a group may run (a retry's);
	// zero for none.
	nextDue time.Time
	// nextTime is the earliest due time left among the delayed jobs and
	// the schedules' next ticks (maybe not after now: more to do); zero
	// for none.
	nextTime time.Time
	// ticked says, schedule by schedule, whether its ticks were applied.
	ticked  []bool
	claimed []claim
	// due are the schedules due now, for the next step to tick.
	due []dueSchedule
	// unacked, when not nil, wraps ErrNotReplicated: fewer replicas than
	// the queue's acks require acknowledged the step (WAIT), so none of
	// claimed may run yet; the rest of the reply holds.
	unacked error
}

// stepArgs is what a step sends.
type stepArgs struct {
	token    int64
	outcomes []outcome
	want     int  // groups to claim at most
	runMax   int  // jobs per claimed group at most
	recover  bool // release the claims that are not held (below) by this leadership
	held     []string
	ticks    []ticks
}

// timeMax is how many due delayed jobs a step moves, and due schedules it
// names, at most; the rest wait for the next step, which comes at once.
const timeMax = 256

// step records a.outcomes, releases lost claims when a.recover, and
// claims up to a.want groups, in one fenced script: one round trip. A
// stale token is refused first and changes nothing.
//
// When the queue's acks ask for replicas (MinReplicas above 0) and the
// step claims, a WAIT follows the script on the same connection, in the
// same round trip: its replication offset covers every write made on
// that master before it, so the claimed jobs' enqueues and idempotency
// keys are acknowledged with the claim. Short of that, the reply says
// why in unacked: its claims must not run, since a failover may still
// discard them, and the caller gives them back.
func (q *Queue) step(ctx context.Context, a stepArgs) (stepReply, error) {
	var c scriptpipe.Client = q.cfg.Client
	b := scriptpipe.Batch{Script: stepScript, Keys: q.stepKeys(), Args: q.stepValues(a)}
	var want int
	if a.want > 0 && q.acks.required() {
		conn, n, err := q.acks.conn(ctx, q.cfg.Client, q.ready)
		if err != nil {
			return stepReply{}, fmt.Errorf("jobs: step: count the replicas: %w", err)
		}
		if conn != nil {
			defer func() { _ = conn.Close() }()
			c, want = conn, n // the script and its WAIT on one connection
			b.After = [][]any{replicas.WaitCommand(want, q.acks.timeout)}
		}
	}
	_, r := scriptpipe.Run(ctx, c, b, nil)
	reply, err := r.Script.Slice()
	if err != nil {
		return stepReply{}, fmt.Errorf("jobs: step: %w", err)
	}
	s, err := q.parseStepReply(a, reply)
	if err == nil && len(b.After) > 0 && len(s.claimed) > 0 { // claiming nothing, it runs nothing
		s.unacked = q.acks.check(r.After[0], want)
	}
	return s, err
}

// parseStepReply decodes and checks step.lua's reply to a.
func (q *Queue) parseStepReply(a stepArgs, reply []any) (stepReply, error) {
	s, err := parseStep(a.token, reply)
	if err != nil {
		return stepReply{}, err
	}
	if len(s.applied) != len(a.outcomes) || len(s.ticked) != len(a.ticks) {
		return stepReply{}, fmt.Errorf("jobs: step: %d outcomes and %d schedules sent, %d and %d answered",
			len(a.outcomes), len(a.ticks), len(s.applied), len(s.ticked))
	}
	for _, c := range s.claimed {
		for i := range c.jobs {
			c.jobs[i].Partition = q.cfg.Partition
		}
	}
	return s, nil
}

// stepKeys is step.lua's KEYS, in its header's order.
func (q *Queue) stepKeys() []string {
	return []string{q.fence, q.ready, q.inflight, q.parked, q.attempts, q.stale, q.counters, q.last, q.dead, q.paused,
		q.delayed, q.schedules, q.schedNext, q.schedLast}
}

// stepValues is step.lua's ARGV for a.
func (q *Queue) stepValues(a stepArgs) []any {
	args := make([]any, 0, 14+len(a.held)+12*len(a.outcomes)+4*len(a.ticks))
	args = append(args, a.token, q.nowMillis(), q.groups, q.deadPrefix, q.idemPrefix, q.cfg.IdempotencyTTL.Milliseconds(),
		a.want, a.runMax, timeMax, btoi(a.recover), len(a.held))
	for _, m := range a.held {
		args = append(args, m)
	}
	args = append(args, len(a.outcomes))
	for _, o := range a.outcomes {
		x, y, z := o.endValues()
		args = append(args, o.member, o.first, o.popped, string(o.end), x, y, z, btoi(o.uncount),
			o.last, o.lastAttempts, len(o.dead), len(o.idem))
		for _, d := range o.dead {
			args = append(args, d.index, d.attempts, d.cause)
		}
		for _, r := range o.idem {
			args = append(args, r.key, r.id)
		}
	}
	args = append(args, len(a.ticks))
	for _, t := range a.ticks {
		var next int64
		if !t.next.IsZero() {
			next = t.next.UnixMilli()
		}
		args = append(args, t.name, t.seen.UnixMilli(), next, len(t.jobs))
		for _, j := range t.jobs {
			args = append(args, j.at.UnixMilli(), j.member, j.entry)
		}
	}
	return args
}

// endValues are the end's a, b and c in step.lua's terms.
func (o outcome) endValues() (a, b, c any) {
	switch o.end {
	case endRetry:
		return o.head, o.attempts, o.due.UnixMilli()
	case endPark:
		return o.head, o.attempts, o.cause
	case endInterrupted:
		return o.head, "", ""
	case endStale:
		return o.head, o.cause, staleLeaderships
	}
	if o.due.IsZero() {
		return 0, "", ""
	}
	return o.due.UnixMilli(), "", ""
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseStep decodes step.lua's reply: {0, fence} when the token is
// stale; else {1, applied, paused, readyNow, nextDue, nextTime, ticked,
// k, runs..., s, schedules...}.
func parseStep(token int64, reply []any) (stepReply, error) {
	if len(reply) < 2 {
		return stepReply{}, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
	}
	switch code, _ := reply[0].(int64); {
	case code == 0:
		return stepReply{}, fmt.Errorf("jobs: step: %w", staleError(token, reply[1:]))
	case code != 1 || len(reply) < 9:
		return stepReply{}, fmt.Errorf("jobs: step: malformed reply %.80v", reply)
	}
	var s stepReply
	s.applied, s.ticked = flags(str(reply[1])), flags(str(reply[6]))
	var n [5]int64 // paused, readyNow, nextDue, nextTime, k
	for i, at := range []int{2, 3, 4, 5, 7} {
		v, ok := reply[at].(int64)
		if !ok {
			return stepReply{}, fmt.Errorf("jobs: step: malformed reply %.80v", reply)
		}
		n[i] = v
	}
	s.paused, s.readyNow, s.nextDue, s.nextTime = n[0] == 1, int(n[1]), msTime(n[2]), msTime(n[3])
	rest := reply[8:]
	for range n[4] {
		c, used, err := parseClaim(rest)
		if err != nil {
			return stepReply{}, err
		}
		s.claimed = append(s.claimed, c)
		rest = rest[used:]
	}
	var err error
	s.due, err = parseDue(rest)
	return s, err
}

// flags reads a string of '1' and '0' as booleans.
func flags(s string) []bool {
	out := make([]bool, 0, len(s))
	for _, c := range s {
		out = append(out, c == '1')
	}
	return out
}

// msTime is the time of unix ms v; zero for a negative v (none).
func msTime(v int64) time.Time {
	if v < 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// parseDue decodes the due schedules that end a step's reply: {s,
// s × {name, spec, next, last}}.
func parseDue(r []any) ([]dueSchedule, error) {
	if len(r) < 1 {
		return nil, errors.New("jobs: step: the reply's due schedules are missing")
	}
	k, ok := r[0].(int64)
	if !ok || len(r) != 1+4*int(k) {
		return nil, fmt.Errorf("jobs: step: malformed due schedules %.80v", r)
	}
	var out []dueSchedule
	for i := 1; i < len(r); i += 4 {
		next, err := strconv.ParseInt(str(r[i+2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jobs: step: schedule %s: next tick %q", str(r[i]), str(r[i+2]))
		}
		d := dueSchedule{name: str(r[i]), spec: str(r[i+1]), next: time.UnixMilli(next)}
		if last := str(r[i+3]); last != "" {
			ms, err := strconv.ParseInt(last, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("jobs: step: schedule %s: last tick %q", d.name, last)
			}
			d.last = time.UnixMilli(ms)
		}
		out = append(out, d)
	}
	return out, nil
}

// parseClaim decodes one claimed run, {member, attempt, count, count
// entries}, at the start of r, and says how many items it took.
func parseClaim(r []any) (claim, int, error) {
	if len(r) < 3 {
		return claim{}, 0, errors.New("jobs: step: a claimed run is cut short")
	}
	attempt, ok1 := r[1].(int64)
	count, ok2 := r[2].(int64)
	if !ok1 || !ok2 || count < 1 || len(r) < 3+int(count) {
		return claim{}, 0, fmt.Errorf("jobs: step: malformed claimed run %.80v", r)
	}
	c := claim{member: str(r[0]), jobs: make([]Job, count)}
	for i := range c.jobs {
		job, _, err := decodeEntry(str(r[3+i]))
		if err != nil {
			return claim{}, 0, fmt.Errorf("jobs: step: group %s: %w", c.member, err)
		}
		job.Attempt = 1
		c.jobs[i] = job
	}
	c.jobs[0].Attempt = int(attempt)
	return c, 3 + int(count), nil
}
