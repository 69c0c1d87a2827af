package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/history"
)

// historyReport is one line of `lockworker history --json`: a
// leadership, or (Event "skipped") an operator's skip of a parked key.
type historyReport struct {
	// Event is "leadership" or "skipped".
	Event string `json:"event"`
	// Partition is the partition led, or the skipped key's.
	Partition        int       `json:"partition"`
	Token            int64     `json:"token,omitempty"`
	WorkerID         string    `json:"workerId,omitempty"`
	Started          time.Time `json:"started,omitzero"`
	PreviousEnded    string    `json:"previousEnded,omitempty"`
	PreviousToken    int64     `json:"previousToken,omitempty"`
	PreviousWorkerID string    `json:"previousWorkerId,omitempty"`
	HandoverMs       *int64    `json:"handoverMs,omitempty"`
	// A skip's: when (At), the parked key ("" for keyless jobs), the job
	// skipped to the dead letters, who skipped it (By) and why.
	At     *time.Time `json:"at,omitempty"`
	Key    *string    `json:"key,omitempty"`
	JobID  string     `json:"jobId,omitempty"`
	By     string     `json:"by,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// when is the time the report is ordered by.
func (r historyReport) when() time.Time {
	if r.At != nil {
		return *r.At
	}
	return r.Started
}

const historyUsage = `usage: lockworker history [--n N] [--json]

Lists the last leaderships, newest first, from the capped stream beside
the lock: each one's fencing token, worker ID and start (on the Redis
server's clock), how the leadership before it ended (released,
stepped_down, fenced or lease_expired) and, after a release, the handover
time between the two. Among them, by time, the operators' skips of
parked keys (lockworker skip, the dashboard, POST /api/keys/skip): a
SKIPPED row with the key, its partition, the job skipped to the dead
letters, who skipped it and why.
  --n N   show at most N rows (default 20; 0 for all)
  --json  print JSON

` + redisSettings

// runHistory lists leaderships, newest first, with how each one's
// predecessor ended, and the skips of parked keys among them, straight
// from Redis.
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
	skips, err := p.History.Skips(ctx, *limit)
	if err != nil {
		return failed("history", "read the skips", err)
	}
	out := historyRows(entries, skips, *limit)
	if *asJSON {
		return printJSON(stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(stdout, "no leadership recorded yet")
		return err
	}
	return printHistory(stdout, out)
}

// historyRows are the leaderships and the skips, newest first, at most
// limit of them (0: all).
func historyRows(entries []history.Entry, skips []history.Skip, limit int64) []historyReport {
	out := make([]historyReport, 0, len(entries)+len(skips))
	for _, e := range entries {
		r := historyReport{Event: "leadership", Partition: e.Partition, Token: e.Token, WorkerID: e.WorkerID, Started: e.Started,
			PreviousEnded: string(e.PreviousEnded), PreviousToken: e.PreviousToken, PreviousWorkerID: e.PreviousWorkerID}
		if e.PreviousEnded != "" && e.PreviousEnded != history.LeaseExpired {
			ms := e.Handover.Milliseconds()
			r.HandoverMs = &ms
		}
		out = append(out, r)
	}
	for _, s := range skips {
		out = append(out, historyReport{Event: "skipped", At: &s.At, Partition: s.Partition, Key: &s.Key, JobID: s.JobID,
			By: s.By, Reason: s.Reason})
	}
	slices.SortStableFunc(out, func(a, b historyReport) int { return b.when().Compare(a.when()) })
	if limit > 0 && int64(len(out)) > limit {
		out = out[:limit]
	}
	return out
}

// printHistory is the text form: a row per leadership, a SKIPPED row per
// skip.
func printHistory(w io.Writer, out []historyReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tWORKER\tSTARTED\tPREVIOUS ENDED\tHANDOVER")
	for _, r := range out {
		if r.Event == "skipped" {
			fmt.Fprintf(tw, "SKIPPED\t%s\t%s\tkey %s (partition %d), job %s: %s\t-\n", cell(r.By), r.At.UTC().Format(stampMs),
				printable(*r.Key), r.Partition, cell(r.JobID), skipReason(r.Reason))
			continue
		}
		ended, handover := r.PreviousEnded, "-"
		if ended == "" {
			ended = "(first recorded)"
		}
		if r.HandoverMs != nil {
			handover = fmt.Sprintf("%dms", *r.HandoverMs)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Token, cell(r.WorkerID), r.Started.UTC().Format(stampMs), cell(ended), handover)
	}
	return tw.Flush()
}

// stampMs is how history prints a time.
const stampMs = "2006-01-02T15:04:05.000Z"

// skipReason is a skip's reason for a table cell.
func skipReason(why string) string {
	if why == "" {
		return "(no reason given)"
	}
	return oneLine(why, 120)
}
