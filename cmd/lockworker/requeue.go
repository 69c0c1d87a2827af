package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lockworker/lockworker/internal/jobs"
)

const requeueUsage = `usage: lockworker requeue [--tail] ID [ID...]

Moves dead letters (lockworker deadletters lists their IDs) back to the
head of their keys, before the jobs of the key still waiting (after the
one in flight, if any), so they replay in order; each becomes a new job
with a new ID and a fresh count of attempts. It prints "old-id -> new-id"
for each. An ID that is no dead letter is an error; the others are still
moved. Several IDs of one key: requeue them newest first to replay them
in their order.
  --tail  to the tail of the key instead, after every job enqueued
          since: the key's order does not hold for them

` + redisSettings

// runRequeue moves dead letters back to their keys, each as a new job; it
// prints "old-id -> new-id" per job.
func runRequeue(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("requeue", flag.ContinueOnError)
	tail := fs.Bool("tail", false, "to the tail of the key")
	if help, err := parseFlags(fs, args, requeueUsage, stdout); help || err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return usageError("requeue", "no job ID")
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	requeue := p.Operator.Requeue
	if *tail {
		requeue = p.Operator.RequeueTail
	}
	var missing []string
	for _, id := range args {
		newID, err := requeue(ctx, id)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			missing = append(missing, cell(id))
		case err != nil:
			return failed("requeue", "move "+cell(id), err)
		default:
			fmt.Fprintf(stdout, "%s -> %s\n", id, newID)
		}
	}
	if len(missing) > 0 {
		return say(jobs.ErrNotFound, "requeue: no dead letter %s (lockworker deadletters lists them)", strings.Join(missing, ", "))
	}
	return nil
}
