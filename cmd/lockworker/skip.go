package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const skipUsage = `usage: lockworker skip --key K | --job ID [--reason TEXT]

Moves the failing job of a parked key (lockworker parked lists them) to
the dead letters and releases the jobs the key held, in order. The key's
order breaks at that job: the dead letter records who skipped it, when
and why (lockworker deadletters shows it; lockworker requeue ID puts it
back at the head of its key), and so does lockworker history, as a
SKIPPED row. Exit 1 when no partition has that key parked.
  --key K        the parked key
  --job ID       the key's failing job (the way to name keyless jobs);
                 with --key too, both must match
  --reason TEXT  why, kept with the dead letter

` + redisSettings

// runSkip dead-letters a parked key's failing job and releases the key.
func runSkip(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("skip", flag.ContinueOnError)
	ref := refFlags(fs)
	reason := fs.String("reason", "", "why")
	if help, err := noArgs(fs, args, skipUsage, stdout); help || err != nil {
		return err
	}
	if ref.Key == "" && ref.JobID == "" {
		return usageError("skip", "say which parked key with --key K or --job ID")
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	id, err := p.Operator.Skip(ctx, *ref, operatorName(getenv), *reason)
	if id == "" {
		return refused("skip", *ref, err)
	}
	if _, werr := fmt.Fprintf(stdout, "%s: job %s skipped to the dead letters; the key's held jobs run now, in order\n", describe(*ref), id); werr != nil {
		return werr
	}
	if err != nil { // done, but the history does not say so
		return failed("skip", "record the skip in the history (the dead letter says who and why)", err)
	}
	return nil
}

// operatorName is who runs a command, as a skip records it: the user and
// host, as far as they are known.
func operatorName(getenv func(string) string) string {
	user := strings.TrimSpace(getenv("USER"))
	if user == "" {
		user = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "lockworker skip (" + user + "@" + host + ")"
}
