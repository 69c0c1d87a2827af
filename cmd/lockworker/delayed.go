package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const delayedUsage = `usage: lockworker delayed [--n N] [--json]

Lists the delayed jobs that are not due yet (enqueue --in or --at,
Lockworker-Not-Before), soonest first: each one's ID, key ("" for none),
partition, due time and how long until then. At its due time the
partition's leader moves it into its key's order, as if enqueued then.
  --n N   show at most N (default 100; 0 for all)
  --json  print JSON (id, key, partition, dueAt, enqueuedAt, payloadBytes)

` + redisSettings

// runDelayed lists the delayed jobs straight from Redis.
func runDelayed(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("delayed", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int64("n", 100, "show at most n, 0 for all")
	if help, err := noArgs(fs, args, delayedUsage, stdout); help || err != nil {
		return err
	}
	if *limit < 0 {
		return usageError("delayed", "--n must be 0 (all) or more, got %d", *limit)
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	list, err := p.Queues.Delayed(ctx, *limit)
	if err != nil {
		return failed("delayed", "read the delayed jobs", err)
	}
	if *asJSON {
		return printJSON(stdout, list)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(stdout, "no delayed jobs")
		return err
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tPARTITION\tDUE AT\tDUE IN")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", d.ID, printable(d.Key), d.Partition, d.DueAt.Format(time.RFC3339Nano),
			max(0, d.DueAt.Sub(now)).Round(time.Second))
	}
	return tw.Flush()
}
