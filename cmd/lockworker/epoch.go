package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

const epochUsage = `usage: lockworker epoch [--raise-to N]

Prints the fencing epoch (the last token handed out). With --raise-to N it
raises the epoch to at least N and never lowers it: every token handed out
afterwards is above N, and a leader holding a lower token finds its writes
rejected, gives its leadership up and the fleet goes on with a new token
within about one LOCK_TTL. Use it after restoring Redis from an old backup,
with N at least the highest token ever used (your stores' records, the
token column of lockworker deadletters, the logs).
  --raise-to N  raise the epoch to at least N

` + redisSettings

// runEpoch reads or raises the fencing epoch on the epoch authority.
func runEpoch(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("epoch", flag.ContinueOnError)
	raise := fs.Int64("raise-to", 0, "raise the epoch to at least N")
	if help, err := parseFlags(fs, args, epochUsage, stdout); help || err != nil {
		return err
	}
	raising := false
	fs.Visit(func(f *flag.Flag) { raising = raising || f.Name == "raise-to" })
	switch {
	case fs.NArg() > 0:
		return usageError("epoch", "unexpected arguments %q", fs.Args())
	case *raise < 0:
		return usageError("epoch", "--raise-to must not be negative, got %d", *raise)
	}
	p, ctx, done, err := oneShot(ctx, getenv)
	if err != nil {
		return err
	}
	defer done()
	if !raising {
		e, err := p.Locker.Epoch(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, e)
		return err
	}
	before, after, err := p.Locker.RaiseEpoch(ctx, *raise)
	if err != nil {
		return err
	}
	if after == before {
		_, err = fmt.Fprintf(stdout, "epoch %d, already at least %d: unchanged\n", before, *raise)
		return err
	}
	_, err = fmt.Fprintf(stdout, "epoch raised from %d to %d; the next token will be above %d\n", before, after, after)
	return err
}
