package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// deadLetterReport is one line of `lockworker deadletters --json`.
type deadLetterReport struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Partition int       `json:"partition"`
	Attempts  int       `json:"attempts"`
	FailedAt  time.Time `json:"failedAt"`
	Token     int64     `json:"token"`
	Error     string    `json:"error"`
	SkippedBy string    `json:"skippedBy,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Payload   string    `json:"payload"`
}

const deadLettersUsage = `usage: lockworker deadletters [--n N] [--json]

Lists the jobs that left the queue without being committed, newest
first: skipped by an operator (lockworker skip), or, with
JOB_ON_FAILURE=dead-letter, failed for good. For each: its ID, key
("" for none), partition, attempts, when it left, the fencing token of
the leader that gave up on it and its last error (the end of an exec
command's stderr), and for a skipped job who skipped it and why.
lockworker requeue ID puts one back at the head of its key.
  --n N   show at most N (default 20; 0 for all)
  --json  print JSON, with the payloads

` + redisSettings

// runDeadLetters lists dead letters, most recent first, straight from Redis.
func runDeadLetters(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("deadletters", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON, payloads included")
	limit := fs.Int64("n", 20, "show at most n, 0 for all")
	if help, err := noArgs(fs, args, deadLettersUsage, stdout); help || err != nil {
		return err
	}
	if *limit < 0 {
		return usageError("deadletters", "--n must be 0 (all) or more, got %d", *limit)
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	dead, err := p.Queues.DeadLetters(ctx, *limit)
	if err != nil {
		return failed("deadletters", "read the dead letters", err)
	}
	if *asJSON {
		out := make([]deadLetterReport, 0, len(dead))
		for _, d := range dead {
			out = append(out, deadLetterReport{ID: d.ID, Key: d.Key, Partition: d.Partition, Attempts: d.Attempts,
				FailedAt: d.FailedAt, Token: d.Token, Error: d.Error, SkippedBy: d.SkippedBy, Reason: d.SkipReason,
				Payload: string(d.Payload)})
		}
		return printJSON(stdout, out)
	}
	if len(dead) == 0 {
		_, err := fmt.Fprintln(stdout, "no dead letters")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tPARTITION\tATTEMPTS\tFAILED AT\tTOKEN\tERROR")
	for _, d := range dead {
		why := d.Error
		if d.SkippedBy != "" {
			why = fmt.Sprintf("skipped by %s: %s (last error: %s)", d.SkippedBy, d.SkipReason, d.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\n", cell(d.ID), printable(d.Key), d.Partition, d.Attempts,
			d.FailedAt.UTC().Format(time.RFC3339), d.Token, oneLine(why, 120))
	}
	return tw.Flush()
}

// oneLine cuts s to max runes and quotes it like cell.
func oneLine(s string, max int) string {
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return cell(s)
}

// cell is s as a table prints it: quoted (strconv.Quote: \x1b, \n, \t,
// invalid UTF-8 escaped) when it holds anything but printable characters
// and spaces, so a value read from Redis (a job's error, a worker's
// name) can neither drive the terminal (escape sequences) nor break the
// table's lines and columns.
func cell(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
