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
	ID       string    `json:"id"`
	Attempts int       `json:"attempts"`
	FailedAt time.Time `json:"failedAt"`
	Token    int64     `json:"token"`
	Error    string    `json:"error"`
	Payload  string    `json:"payload"`
}

const deadLettersUsage = `usage: lockworker deadletters [--n N] [--json]

Lists the jobs that failed JOB_MAX_ATTEMPTS times and left the queue,
newest first: each one's ID, attempts, when it gave up, the fencing token
of the leader that gave up and its last error (the end of an exec
command's stderr). lockworker requeue ID puts one back.
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
			out = append(out, deadLetterReport{ID: d.ID, Attempts: d.Attempts, FailedAt: d.FailedAt,
				Token: d.Token, Error: d.Error, Payload: string(d.Payload)})
		}
		return printJSON(stdout, out)
	}
	if len(dead) == 0 {
		_, err := fmt.Fprintln(stdout, "no dead letters")
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tATTEMPTS\tFAILED AT\tTOKEN\tERROR")
	for _, d := range dead {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", cell(d.ID), d.Attempts, d.FailedAt.UTC().Format(time.RFC3339), d.Token, oneLine(d.Error, 120))
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
