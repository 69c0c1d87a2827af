package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/config"
)

// runRequeue moves dead letters back to the tail of the queue, each as a
// new job; it prints "old-id -> new-id" per job.
func runRequeue(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	const usage = "usage: lockworker requeue ID [ID...] (list them with lockworker deadletters)"
	fs := flag.NewFlagSet("requeue", flag.ContinueOnError)
	if help, err := parseFlags(fs, args, usage, stdout); help || err != nil {
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return usageError("requeue: no job ID (%s)", usage)
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	var errs []error
	for _, id := range args {
		newID, err := p.Queue.Requeue(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "%s -> %s\n", id, newID)
	}
	return errors.Join(errs...)
}
