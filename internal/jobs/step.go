package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

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
	claimed []claim
}

// stepArgs is what a step sends.
type stepArgs struct {
	token    int64
	outcomes []outcome
	want     int  // groups to claim at most
	runMax   int  // jobs per claimed group at most
	recover  bool // release the claims that are not held (below) by this leadership
	held     []string
}

// step records a.outcomes, releases lost claims when a.recover, and
// claims up to a.want groups, in one fenced script: one round trip. A
// stale token is refused first and changes nothing.
func (q *Queue) step(ctx context.Context, a stepArgs) (stepReply, error) {
	_, r := scriptpipe.Run(ctx, q.cfg.Client, scriptpipe.Batch{Script: stepScript, Keys: q.stepKeys(), Args: q.stepValues(a)}, nil)
	reply, err := r.Script.Slice()
	if err != nil {
		return stepReply{}, fmt.Errorf("jobs: step: %w", err)
	}
	s, err := parseStep(a.token, reply)
	if err != nil {
		return stepReply{}, err
	}
	if len(s.applied) != len(a.outcomes) {
		return stepReply{}, fmt.Errorf("jobs: step: %d outcomes sent, %d answered", len(a.outcomes), len(s.applied))
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
	return []string{q.fence, q.ready, q.inflight, q.parked, q.attempts, q.stale, q.counters, q.last, q.dead, q.paused}
}

// stepValues is step.lua's ARGV for a.
func (q *Queue) stepValues(a stepArgs) []any {
	args := make([]any, 0, 10+len(a.held)+11*len(a.outcomes))
	args = append(args, a.token, q.nowMillis(), q.groups, q.deadPrefix, a.want, a.runMax, btoi(a.recover), len(a.held))
	for _, m := range a.held {
		args = append(args, m)
	}
	args = append(args, len(a.outcomes))
	for _, o := range a.outcomes {
		x, y, z := o.endValues()
		args = append(args, o.member, o.first, o.popped, string(o.end), x, y, z, btoi(o.uncount),
			o.last, o.lastAttempts, len(o.dead))
		for _, d := range o.dead {
			args = append(args, d.index, d.attempts, d.cause)
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
// stale; else {1, applied, paused, readyNow, nextDue, k, runs...}.
func parseStep(token int64, reply []any) (stepReply, error) {
	if len(reply) < 2 {
		return stepReply{}, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
	}
	switch code, _ := reply[0].(int64); {
	case code == 0:
		return stepReply{}, fmt.Errorf("jobs: step: %w", staleError(token, reply[1:]))
	case code != 1 || len(reply) < 6:
		return stepReply{}, fmt.Errorf("jobs: step: malformed reply %.80v", reply)
	}
	var s stepReply
	for _, c := range str(reply[1]) {
		s.applied = append(s.applied, c == '1')
	}
	paused, ok1 := reply[2].(int64)
	ready, ok2 := reply[3].(int64)
	due, ok3 := reply[4].(int64)
	k, ok4 := reply[5].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return stepReply{}, fmt.Errorf("jobs: step: malformed reply %.80v", reply)
	}
	s.paused, s.readyNow = paused == 1, int(ready)
	if due >= 0 {
		s.nextDue = time.UnixMilli(due)
	}
	rest := reply[6:]
	for range k {
		c, n, err := parseClaim(rest)
		if err != nil {
			return stepReply{}, err
		}
		s.claimed = append(s.claimed, c)
		rest = rest[n:]
	}
	return s, nil
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
