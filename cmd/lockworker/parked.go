package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
)

const parkedUsage = `usage: lockworker parked [--json]

Lists the parked keys, longest parked first: keys whose job failed for
good (JOB_MAX_ATTEMPTS spent, a permanent error, or a store that refused
three leaderships' tokens) and that hold that job and every later job of
the key, in order, until lockworker retry or skip. For each: the key
("" for keyless jobs: name them by job), its partition, the jobs it
holds, the failing job, its attempts, when it parked and the last error.
  --json  print a JSON array (key, partition, held, jobId, attempts,
          error, parkedAt, token)

` + redisSettings

// runParked lists the parked keys, straight from Redis.
func runParked(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("parked", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := noArgs(fs, args, parkedUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	parked, err := p.Operator.Parked(ctx)
	if err != nil {
		return failed("parked", "read the parked keys", err)
	}
	if *asJSON {
		return printJSON(stdout, append([]jobs.ParkedKey{}, parked...))
	}
	if len(parked) == 0 {
		_, err := fmt.Fprintln(stdout, "no parked keys")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPARTITION\tHELD\tJOB\tATTEMPTS\tPARKED AT\tERROR")
	for _, k := range parked {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\n", printable(k.Key), k.Partition, k.Held, cell(k.JobID), k.Attempts,
			k.ParkedAt.UTC().Format(time.RFC3339), oneLine(k.Error, 120))
	}
	return tw.Flush()
}
