package jobs

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
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

// stepped is what a step did: record is "none", "ok", "done" or "order"
// (see step.lua), position the committed position after it, and claimed
// the jobs it handed out, in queue order (none when paused or empty).
type stepped struct {
	record   string
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
	var run, read *redis.Cmd
	exec := func(eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) {
		pipe := q.cfg.Client.Pipeline()
		run = eval(ctx, pipe, keys, args...)
		if claim > 0 && expect != "" {
			read = pipe.Do(ctx, "XRANGE", q.stream, "("+expect, "+", "COUNT", claim)
		}
		_, _ = pipe.Exec(ctx) // the errors are the commands' own, read below
	}
	// A pipeline has no EVAL fallback: when Redis lacks the script (a new
	// or restarted server) send the step again with its body, which also
	// caches it (no SCRIPT LOAD, which the ACL user of docs/operations.md lacks).
	if exec(stepScript.EvalSha); redis.HasErrorPrefix(run.Err(), "NOSCRIPT") {
		exec(stepScript.Eval)
	}
	if err := run.Err(); err != nil {
		return stepped{}, fmt.Errorf("jobs: step: %w", err)
	}
	reply, err := run.Slice()
	if err != nil {
		return stepped{}, fmt.Errorf("jobs: step: %w", err)
	}
	s, count, err := parseStep(token, reply)
	if err != nil || count == 0 {
		return s, err
	}
	if read == nil || expect != s.position {
		read = nil // it started elsewhere (the first step, a position gone back)
	}
	s.claimed, err = q.readClaimed(ctx, read, s.position, count)
	return s, err
}

// stepArgs is step.lua's keys and arguments for b and claim.
func (q *Queue) stepArgs(token int64, b batch, claim int) (keys []string, args []any) {
	keys = []string{q.fence, q.position, q.stream, q.attempts, q.paused, q.counters, q.last, q.dead, q.claimed}
	args = make([]any, 0, 8+6*len(b.done))
	args = append(args, token, q.nowMillis(), claim, b.from)
	switch {
	case len(b.unstarted) > 0 && b.unstarted[0].single:
		args = append(args, "single", b.unstarted[0].job.ID)
	case len(b.unstarted) > 0 || b.started != nil && !b.started.single:
		kept := 0
		if b.started != nil {
			kept = 1
		}
		args = append(args, "batch", kept)
	default:
		args = append(args, "", "")
	}
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
		args = append(args, o.e.streamID, o.e.job.ID, o.attempts, o.cause, payload, enqueued)
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

// parseStep reads step.lua's reply; count is the size of a claimed batch
// whose entries are still to be read.
func parseStep(token int64, reply []any) (stepped, int, error) {
	tag, rest, err := splitReply(reply)
	if err != nil {
		return stepped{}, 0, fmt.Errorf("jobs: step: %w", err)
	}
	if tag == "stale" {
		return stepped{}, 0, fmt.Errorf("jobs: step: %w", staleError(token, rest))
	}
	switch tag {
	case "none", "ok", "done", "order":
	default:
		return stepped{}, 0, fmt.Errorf("jobs: step: unexpected reply %q", tag)
	}
	if len(rest) < 3 {
		return stepped{}, 0, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
	}
	s := stepped{record: tag, position: str(rest[0])}
	n, err := strconv.Atoi(str(rest[2]))
	if err != nil {
		return stepped{}, 0, fmt.Errorf("jobs: step: count: %w", err)
	}
	switch str(rest[1]) {
	case "none", "empty":
	case "paused":
		s.paused = true
	case "batch":
		return s, n, nil
	case "single":
		if len(rest) < 4 {
			return stepped{}, 0, fmt.Errorf("jobs: step: malformed reply of %d items", len(reply))
		}
		e, err := parseEntry(rest[3])
		if err != nil {
			return stepped{}, 0, err
		}
		e.job.Attempt, e.single = n, true
		s.claimed = []*entry{e}
	default:
		return stepped{}, 0, fmt.Errorf("jobs: step: unexpected claim reply %q", str(rest[1]))
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
