package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/scriptpipe"
)

// entry is a claimed job: its stream entry and the delivery.
type entry struct {
	streamID string
	job      Job
	// single: handed out alone, its delivery counted in the attempts hash
	// (a redelivery); else the first delivery, as part of a batch.
	single bool
}

// outcome is how a claimed job finished: committed (cause == "") after
// attempts deliveries, or dead-lettered with cause.
type outcome struct {
	e        *entry
	attempts int
	cause    string
}

// batch is what a run of claimed jobs leaves for the next step: from, the
// position they were claimed after (the last known position); the
// outcomes of the finished ones, in order; the claimed ones that never
// started; and started, the one after the finished ones that started but
// did not finish (failed or interrupted), if any.
type batch struct {
	from      string
	done      []outcome
	unstarted []*entry
	started   *entry
}

// empty: nothing for a step to record or give back. A started job of a
// batch claim is reported (its claim mark is then another delivery); one
// handed out alone is counted in the attempts hash already.
func (b batch) empty() bool {
	return len(b.done) == 0 && len(b.unstarted) == 0 && (b.started == nil || b.started.single)
}

// record is how a step recorded the outcomes it carried: step.lua's
// first reply value.
type record int64

const (
	recordStale record = iota // the token is below the fence: nothing changed (fence.lua)
	recordNone                // no outcomes
	recordOK                  // recorded
	recordDone                // a resent step: already recorded
	recordOrder               // not the entries after the position: nothing recorded
)

func (r record) String() string {
	switch r {
	case recordStale:
		return "stale"
	case recordNone:
		return "none"
	case recordOK:
		return "ok"
	case recordDone:
		return "done"
	case recordOrder:
		return "order"
	}
	return "record(" + strconv.FormatInt(int64(r), 10) + ")"
}

// claimResult is what a step's claim did: step.lua's third reply value.
type claimResult int64

const (
	claimNone   claimResult = iota // none asked for
	claimPaused                    // the queue is paused
	claimEmpty                     // no job pending
	claimBatch                     // the first count jobs after the position, each a first delivery
	claimSingle                    // one job redelivered, its entry in the reply
)

// giveBack is what a step gives back of the last claim: step.lua's ARGV[5].
type giveBack int

const (
	giveNothing    giveBack = iota
	giveBackBatch           // the claimed jobs never started, but for ARGV[6] (0 or 1)
	giveBackSingle          // one delivery of the job ARGV[6], handed out alone
)

// stepped is what a step did: how it recorded its outcomes, position the
// committed position after it, and claimed the jobs it handed out, in
// queue order (none when paused or empty).
type stepped struct {
	record   record
	position string
	paused   bool
	claimed  []*entry
}

// step records b (the finished jobs at the head of the queue, in order,
// and the deliveries of the claimed jobs that never started) and claims up
// to claim jobs, in one fenced script and, pipelined behind it, one read
// of the claimed entries: one round trip. A stale token is refused first
// and changes nothing.
func (q *Queue) step(ctx context.Context, token int64, b batch, claim int) (stepped, error) {
	keys, args := q.stepArgs(token, b, claim)
	// The position this step should leave: the last outcome's, or the
	// one the jobs were claimed after.
	expect := b.from
	if n := len(b.done); n > 0 {
		expect = b.done[n-1].e.streamID
	}
	// The claimed entries are read in the same round trip, after the
	// position the step should leave.
	send := scriptpipe.Batch{Script: stepScript, Keys: keys, Args: args}
	if claim > 0 && expect != "" {
		send.After = [][]any{{"XRANGE", q.stream, "(" + expect, "+", "COUNT", claim}}
	}
	_, r := scriptpipe.Run(ctx, q.cfg.Client, send, nil)
	reply, err := r.Script.Slice()
	if err != nil {
		return stepped{}, fmt.Errorf("jobs: step: %w", err)
	}
	s, count, err := parseStep(token, reply)
	if err == nil && count > 0 {
		var read *redis.Cmd
		if len(r.After) > 0 && expect == s.position {
			read = r.After[0] // else it started elsewhere (the first step, a position gone back)
		}
		s.claimed, err = q.readClaimed(ctx, read, s.position, count)
	}
	for _, e := range s.claimed {
		e.job.Partition = q.cfg.Partition
	}
	return s, err
}

// stepArgs is step.lua's keys and arguments for b and claim.
func (q *Queue) stepArgs(token int64, b batch, claim int) (keys []string, args []any) {
	keys = []string{q.fence, q.position, q.stream, q.attempts, q.paused, q.counters, q.last, q.dead, q.claimed}
	args = make([]any, 0, 8+7*len(b.done))
	args = append(args, token, q.nowMillis(), claim, b.from)
	give, what := giveNothing, any("")
	switch {
	case len(b.unstarted) > 0 && b.unstarted[0].single:
		give, what = giveBackSingle, b.unstarted[0].job.ID
	case len(b.unstarted) > 0 || b.started != nil && !b.started.single:
		kept := 0
		if b.started != nil {
			kept = 1
		}
		give, what = giveBackBatch, kept
	}
	args = append(args, int(give), what)
	forget := ""
	for _, o := range b.done {
		if o.e.single {
			forget = o.e.job.ID // handed out alone: its count is in the hash
		}
	}
	args = append(args, forget, len(b.done))
	for _, o := range b.done {
		payload, enqueued := "", ""
		if o.cause != "" {
			keys = append(keys, q.deadRecord(o.e.job.ID))
			payload, enqueued = string(o.e.job.Payload), "0"
			if t := o.e.job.EnqueuedAt; !t.IsZero() {
				enqueued = strconv.FormatInt(t.UnixMilli(), 10)
			}
		}
		args = append(args, o.e.streamID, o.e.job.ID, o.attempts, o.cause, payload, enqueued, o.e.job.Key)
	}
	return keys, args
}

// readClaimed returns the count entries a step claimed after position:
// from read, the XRANGE pipelined behind the step, or when that is nil
// from one more read.
func (q *Queue) readClaimed(ctx context.Context, read *redis.Cmd, position string, count int) ([]*entry, error) {
	var entries []any
	var err error
	if read != nil {
		entries, err = read.Slice()
	} else {
		pipe := q.cfg.Client.Pipeline() // Cmdable has no Do
		read = pipe.Do(ctx, "XRANGE", q.stream, "("+position, "+", "COUNT", count)
		if _, err = pipe.Exec(ctx); err == nil {
			entries, err = read.Slice()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: step: read the claimed jobs: %w", err)
	}
	if len(entries) < count {
		return nil, fmt.Errorf("jobs: step: %d claimed, %d read", count, len(entries))
	}
	claimed := make([]*entry, count)
	for i := range count {
		if claimed[i], err = parseEntry(entries[i]); err != nil {
			return nil, err
		}
		claimed[i].job.Attempt = 1
	}
	return claimed, nil
}

// parseStep reads step.lua's reply, {record, position, claim, count,
// [entry]} or {recordStale, fence}; count is the size of a claimed batch
// whose entries are still to be read.
func parseStep(token int64, reply []any) (stepped, int, error) {
	if len(reply) == 0 {
		return stepped{}, 0, errors.New("jobs: step: empty reply")
	}
	rec, ok := reply[0].(int64)
	switch {
	case !ok:
		return stepped{}, 0, fmt.Errorf("jobs: step: unexpected reply %v", reply[0])
	case record(rec) == recordStale:
		return stepped{}, 0, fmt.Errorf("jobs: step: %w", staleError(token, reply[1:]))
	case record(rec) > recordOrder:
		return stepped{}, 0, fmt.Errorf("jobs: step: unexpected reply %v", record(rec))
	case len(reply) < 4:
		return stepped{}, 0, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
	}
	s := stepped{record: record(rec), position: str(reply[1])}
	claim, ok1 := reply[2].(int64)
	n, ok2 := reply[3].(int64)
	if !ok1 || !ok2 {
		return stepped{}, 0, fmt.Errorf("jobs: step: malformed claim %v %v", reply[2], reply[3])
	}
	switch claimResult(claim) {
	case claimNone, claimEmpty:
	case claimPaused:
		s.paused = true
	case claimBatch:
		return s, int(n), nil
	case claimSingle:
		if len(reply) < 5 {
			return stepped{}, 0, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
		}
		e, err := parseEntry(reply[4])
		if err != nil {
			return stepped{}, 0, err
		}
		e.job.Attempt, e.single = int(n), true
		s.claimed = []*entry{e}
	default:
		return stepped{}, 0, fmt.Errorf("jobs: step: unexpected claim reply %d", claim)
	}
	return s, 0, nil
}

// parseEntry reads one stream entry, {streamID, {field, value, ...}}.
func parseEntry(v any) (*entry, error) {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return nil, fmt.Errorf("jobs: step: malformed entry %v", v)
	}
	fields, _ := pair[1].([]any)
	e := &entry{streamID: str(pair[0])}
	e.job.ID = e.streamID // an entry added by hand without an id is known by its stream ID
	for i := 0; i+1 < len(fields); i += 2 {
		switch v := str(fields[i+1]); str(fields[i]) {
		case "id":
			e.job.ID = v
		case "payload":
			e.job.Payload = []byte(v)
		case "key":
			e.job.Key = v
		case "enqueued_at":
			e.job.EnqueuedAt = millisTime(v)
		}
	}
	return e, nil
}

// orderError is the errOrder of a step whose outcomes were not the
// entries after the store's position.
func orderError(done []outcome, position string) error {
	first, last := done[0].e, done[len(done)-1].e
	return fmt.Errorf("%w: recording %d job(s), %s (stream ID %s) to %s (stream ID %s), with committed position %s",
		errOrder, len(done), first.job.ID, first.streamID, last.job.ID, last.streamID, position)
}
