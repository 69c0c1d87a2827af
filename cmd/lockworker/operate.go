package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/operator"
)

const stepDownUsage = `usage: lockworker stepdown [--token N] [--partition N]

Asks the leader to step down, through Redis (no replica's HTTP port is
needed): the replica that leads stops its work, releases the lock with
its release notice and stays out for twice RETRY_INTERVAL, so another
replica takes over within milliseconds. It waits for that replica and
prints who leads now, with its token and how long it took. Exit 1 when
nobody leads, when the leadership --token names has already ended
(nothing is asked of the one that followed), or when the leader did not
let go within 5 s.
  --token N      the fencing token of the leadership that must step down
                 (as status shows it); without it, whichever leads when
                 the request is read
  --partition N  with PARTITIONS > 1, the partition whose leader steps
                 down (required there); it goes to another replica

` + redisSettings

// runStepDown asks the current leader to step down, through Redis (no
// daemon's HTTP port needed), and waits for another replica to lead.
func runStepDown(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("stepdown", flag.ContinueOnError)
	part := partitionFlag(fs, "the partition whose leader steps down")
	token := fs.Int64("token", 0, "the fencing token of the leadership that must step down")
	if help, err := noArgs(fs, args, stepDownUsage, stdout); help || err != nil {
		return err
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "token" })
	if given && *token < 1 {
		return usageError("stepdown", "--token %d: a fencing token is a number from 1", *token)
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	n, err := onePartition("stepdown", p, part)
	if err != nil {
		return err
	}
	h, err := p.Operator.StepDown(ctx, n, *token)
	switch {
	case errors.Is(err, operator.ErrNoLeader):
		return say(err, "stepdown: no replica leads, so none can step down")
	case errors.Is(err, operator.ErrEnded):
		return say(err, "stepdown: %s", strings.TrimPrefix(err.Error(), "operator: "))
	case err != nil && h.From.Held && ctx.Err() != nil:
		return say(err, "stepdown: %s (token %d) still leads: it did not step down within %s", cell(h.From.WorkerID), h.From.Token, oneShotTimeout)
	case err != nil:
		return failed("stepdown", "ask the leader to step down", err)
	}
	if !h.To.Held {
		_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down after %dms; no replica leads yet\n",
			cell(h.From.WorkerID), h.From.Token, h.Took.Milliseconds())
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down; %s leads with token %d, %dms after the request\n",
		cell(h.From.WorkerID), h.From.Token, cell(h.To.WorkerID), h.To.Token, h.Took.Milliseconds())
	return err
}

const pauseUsage = `usage: lockworker pause [--partition N]

Pauses the job queue for the whole fleet: the leader keeps the lock and
finishes the job in flight (with group commit, the rest of its batch),
then takes no new job until lockworker resume. Jobs can still be
enqueued. status, /status, the dashboard and the metric
lockworker_queue_paused show the pause.
  --partition N  with PARTITIONS > 1, pause only partition N's queue
                 (default: every partition's)

` + redisSettings

// runPause stops the leader from taking new jobs, fleet-wide; it keeps
// the lock, and the job in flight finishes.
func runPause(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pause", flag.ContinueOnError)
	part := partitionFlag(fs, "pause only this partition's queue")
	if help, err := noArgs(fs, args, pauseUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	n, what, err := somePartitions("pause", p, part)
	if err != nil {
		return err
	}
	if err := p.Operator.Pause(ctx, n); err != nil {
		return failed("pause", "write the pause", err)
	}
	_, err = fmt.Fprintf(stdout, "%s paused: the leader takes no new job until lockworker resume\n", what)
	return err
}

const resumeUsage = `usage: lockworker resume [--partition N]

Lifts a pause (lockworker pause): the leader is woken at once and takes
the next job. Resuming a queue that is not paused changes nothing.
  --partition N  with PARTITIONS > 1, resume only partition N's queue
                 (default: every partition's)

` + redisSettings

// runResume lifts a pause.
func runResume(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	part := partitionFlag(fs, "resume only this partition's queue")
	if help, err := noArgs(fs, args, resumeUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	n, what, err := somePartitions("resume", p, part)
	if err != nil {
		return err
	}
	if err := p.Operator.Resume(ctx, n); err != nil {
		return failed("resume", "lift the pause", err)
	}
	_, err = fmt.Fprintf(stdout, "%s resumed\n", what)
	return err
}

// somePartitions is what pause and resume act on: the partition
// --partition names, else all of them (operator.AllPartitions), and how
// to say it.
func somePartitions(cmd string, b *backend.Backend, p *partitionArg) (int, string, error) {
	switch {
	case !p.given && b.Partitions == 1:
		return operator.AllPartitions, "queue", nil
	case !p.given:
		return operator.AllPartitions, fmt.Sprintf("all %d partitions' queues", b.Partitions), nil
	}
	n, err := onePartition(cmd, b, p)
	return n, fmt.Sprintf("partition %d's queue", n), err
}
