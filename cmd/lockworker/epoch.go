package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/redislock"
)

const epochUsage = `usage: lockworker epoch [--raise-to N] [--partition P]

Prints the fencing epoch (the last token handed out). With --raise-to N it
raises the epoch to at least N and never lowers it: every token handed out
afterwards is above N, and a leader holding a lower token finds its writes
rejected, gives its leadership up and the fleet goes on with a new token
within about one LOCK_TTL. Use it after restoring Redis from an old backup,
with N at least the highest token ever used (your stores' records, the
token column of lockworker deadletters, the logs).
  --raise-to N   raise the epoch to at least N
  --partition P  with PARTITIONS > 1, only partition P's epoch (each
                 partition has its own; default: every partition's, one
                 line each)

` + redisSettings

// runEpoch reads or raises the fencing epoch on the epoch authority.
func runEpoch(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("epoch", flag.ContinueOnError)
	raise := fs.Int64("raise-to", 0, "raise the epoch to at least N")
	part := partitionFlag(fs, "only this partition's epoch")
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
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	parts := make([]int, p.Partitions)
	for i := range parts {
		parts[i] = i
	}
	if part.given {
		n, err := onePartition("epoch", p, part)
		if err != nil {
			return err
		}
		parts = []int{n}
	}
	doing := "read the epoch"
	if raising {
		doing = "raise the epoch"
	}
	for _, n := range parts {
		prefix := ""
		if p.Partitions > 1 {
			prefix = fmt.Sprintf("partition %d: ", n)
		}
		if err := epochOf(ctx, p.Lockers[n], raising, *raise, prefix, stdout); err != nil {
			return failed("epoch", prefix+doing, err)
		}
	}
	return nil
}

// epochOf prints one lock's epoch, or raises it to at least raise.
func epochOf(ctx context.Context, l *redislock.Locker, raising bool, raise int64, prefix string, stdout io.Writer) error {
	if !raising {
		e, err := l.Epoch(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s%d\n", prefix, e)
		return err
	}
	before, after, err := l.RaiseEpoch(ctx, raise)
	if err != nil {
		return err
	}
	if after == before {
		_, err = fmt.Fprintf(stdout, "%sepoch %d, already at least %d: unchanged\n", prefix, before, raise)
		return err
	}
	_, err = fmt.Fprintf(stdout, "%sepoch raised from %d to %d; the next token will be above %d\n", prefix, before, after, after)
	return err
}
