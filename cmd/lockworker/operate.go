package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

const stepDownUsage = `usage: lockworker stepdown

Asks the leader to step down, through Redis (no replica's HTTP port is
needed): the replica that leads with the current fencing token stops its
work, releases the lock with its release notice and stays out for twice
RETRY_INTERVAL, so another replica takes over within milliseconds. It
waits for that replica and prints who leads now, with its token and how
long it took. Exit 1 when nobody leads, or when the leader did not let go
within 5 s.

` + redisSettings

// runStepDown asks the current leader to step down, through Redis (no
// daemon's HTTP port needed), and waits for another replica to lead.
func runStepDown(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	if help, err := noArgs(flag.NewFlagSet("stepdown", flag.ContinueOnError), args, stepDownUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	h, err := p.Operator.StepDown(ctx)
	if err != nil {
		return err
	}
	if !h.To.Held {
		_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down after %dms; no replica leads yet\n",
			h.From.WorkerID, h.From.Token, h.Took.Milliseconds())
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down; %s leads with token %d, %dms after the request\n",
		h.From.WorkerID, h.From.Token, h.To.WorkerID, h.To.Token, h.Took.Milliseconds())
	return err
}

const pauseUsage = `usage: lockworker pause

Pauses the job queue for the whole fleet: the leader keeps the lock and
finishes the job in flight (with group commit, the rest of its batch),
then takes no new job until lockworker resume. Jobs can still be
enqueued. status, /status, the dashboard and the metric
lockworker_queue_paused show the pause.

` + redisSettings

// runPause stops the leader from taking new jobs, fleet-wide; it keeps
// the lock, and the job in flight finishes.
func runPause(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	if help, err := noArgs(flag.NewFlagSet("pause", flag.ContinueOnError), args, pauseUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	if err := p.Operator.Pause(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, "queue paused: the leader takes no new job until lockworker resume")
	return err
}

const resumeUsage = `usage: lockworker resume

Lifts a pause (lockworker pause): the leader is woken at once and takes
the next job. Resuming a queue that is not paused changes nothing.

` + redisSettings

// runResume lifts a pause.
func runResume(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	if help, err := noArgs(flag.NewFlagSet("resume", flag.ContinueOnError), args, resumeUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	if err := p.Operator.Resume(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, "queue resumed")
	return err
}
