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

const requeueUsage = `usage: lockworker requeue ID [ID...]

Moves dead letters (lockworker deadletters lists their IDs) back to the
tail of the queue, each as a new job with a new ID and a fresh count of
attempts, and prints "old-id -> new-id" for each. An ID that is no dead
letter is an error; the others are still moved.

` + redisSettings

// runRequeue moves dead letters back to the tail of the queue, each as a
// new job; it prints "old-id -> new-id" per job.
func runRequeue(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("requeue", flag.ContinueOnError)
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
	var missing []string
	for _, id := range args {
		newID, err := p.Operator.Requeue(ctx, id)
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
