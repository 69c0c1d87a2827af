package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// historyReport is one line of `lockworker history --json`.
type historyReport struct {
	Token            int64     `json:"token"`
	WorkerID         string    `json:"workerId"`
	Started          time.Time `json:"started"`
	PreviousEnded    string    `json:"previousEnded,omitempty"`
	PreviousToken    int64     `json:"previousToken,omitempty"`
	PreviousWorkerID string    `json:"previousWorkerId,omitempty"`
	HandoverMs       *int64    `json:"handoverMs,omitempty"`
}

const historyUsage = `usage: lockworker history [--n N] [--json]

Lists the last leaderships, newest first, from the capped stream beside
the lock: each one's fencing token, worker ID and start (on the Redis
server's clock), how the leadership before it ended (released,
stepped_down, fenced or lease_expired) and, after a release, the handover
time between the two.
  --n N   show at most N leaderships (default 20; 0 for all)
  --json  print JSON

` + redisSettings

// runHistory lists leaderships, newest first, with how each one's
// predecessor ended, straight from Redis.
func runHistory(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int64("n", 20, "show at most n, 0 for all")
	if help, err := noArgs(fs, args, historyUsage, stdout); help || err != nil {
		return err
	}
	if *limit < 0 {
		return usageError("history", "--n must be 0 (all) or more, got %d", *limit)
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	entries, err := p.History.List(ctx, *limit)
	if err != nil {
		return failed("history", "read the leaderships", err)
	}
	out := make([]historyReport, 0, len(entries))
	for _, e := range entries {
		r := historyReport{Token: e.Token, WorkerID: e.WorkerID, Started: e.Started, PreviousEnded: string(e.PreviousEnded),
			PreviousToken: e.PreviousToken, PreviousWorkerID: e.PreviousWorkerID}
		if e.PreviousEnded != "" && e.PreviousEnded != "lease_expired" {
			ms := e.Handover.Milliseconds()
			r.HandoverMs = &ms
		}
		out = append(out, r)
	}
	if *asJSON {
		return printJSON(stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(stdout, "no leadership recorded yet")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tWORKER\tSTARTED\tPREVIOUS ENDED\tHANDOVER")
	for _, r := range out {
		ended, handover := r.PreviousEnded, "-"
		if ended == "" {
			ended = "(first recorded)"
		}
		if r.HandoverMs != nil {
			handover = fmt.Sprintf("%dms", *r.HandoverMs)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Token, cell(r.WorkerID), r.Started.UTC().Format("2006-01-02T15:04:05.000Z"), cell(ended), handover)
	}
	return tw.Flush()
}
