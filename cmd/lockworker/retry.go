package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/jobs"
)

const retryUsage = `usage: lockworker retry --key K | --job ID

Runs the failing job of a parked key (lockworker parked lists them) again
now, with fresh attempts; once it succeeds, the jobs the key held follow
in order. Exit 1 when no partition has that key parked.
  --key K   the parked key
  --job ID  the key's failing job (the way to name keyless jobs); with
            --key too, both must match

` + redisSettings

// runRetry releases a parked key by running its failing job again.
func runRetry(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	ref := refFlags(fs)
	if help, err := noArgs(fs, args, retryUsage, stdout); help || err != nil {
		return err
	}
	if ref.Key == "" && ref.JobID == "" {
		return usageError("retry", "say which parked key with --key K or --job ID")
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	id, err := p.Operator.Retry(ctx, *ref)
	if err != nil {
		return refused("retry", *ref, err)
	}
	_, err = fmt.Fprintf(stdout, "%s: job %s runs again with fresh attempts; the key's held jobs follow it\n", describe(*ref), id)
	return err
}

// refFlags adds --key and --job to fs: the parked key a command acts on.
func refFlags(fs *flag.FlagSet) *jobs.Ref {
	var r jobs.Ref
	fs.StringVar(&r.Key, "key", "", "the parked key")
	fs.StringVar(&r.JobID, "job", "", "the parked key's failing job")
	return &r
}

// describe names a parked key for people.
func describe(r jobs.Ref) string {
	if r.Key != "" {
		return "key " + printable(r.Key)
	}
	return "the key of job " + cell(r.JobID)
}

// refused is the sentence of a retry or skip that did not happen: the key
// is not parked (lockworker parked lists those that are), or Redis said
// no.
func refused(cmd string, r jobs.Ref, err error) error {
	if errors.Is(err, jobs.ErrNotParked) {
		return say(err, "%s: %s is not parked (lockworker parked lists the parked keys)", cmd, describe(r))
	}
	return failed(cmd, "act on "+describe(r), err)
}
