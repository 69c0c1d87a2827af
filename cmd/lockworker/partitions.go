package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

const partitionsUsage = `usage: lockworker partitions [--json]

Lists every partition of the fleet (one without partitions) straight from
Redis: its owner (the worker ID that holds its lease, or - when nobody
does), the owner's fencing token, the jobs pending and how long the
oldest one that may run has waited, the keys with a job in flight, the
parked keys, the delayed jobs not yet due, the jobs committed and
dead-lettered, and whether an operator paused it; then how many
partitions each replica owns. The leases and the queues are read side by
side, not atomically.
  --json  the same as a JSON array, one object per partition (partition,
          owner, token, pending, oldestPendingMs, inFlight, parked,
          oldestParkedMs, retries, committed, deadLettered, epoch, paused,
          delayed)

` + redisSettings

// runPartitions lists every partition's owner, from its lease, and its
// queue's figures.
func runPartitions(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("partitions", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := noArgs(fs, args, partitionsUsage, stdout); help || err != nil {
		return err
	}
	b, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	parts, err := b.PartitionTable(ctx)
	if err != nil {
		return failed("partitions", "read the partitions", err)
	}
	if *asJSON {
		return printJSON(stdout, parts)
	}
	return printPartitions(stdout, parts)
}

// printPartitions is the text form: a row per partition, then the count
// each owner holds.
func printPartitions(w io.Writer, parts []figures.Partition) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tOWNER\tTOKEN\tPENDING\tOLDEST\tIN FLIGHT\tPARKED\tDELAYED\tCOMMITTED\tDEAD\tPAUSED")
	owned := map[string]int{}
	for _, p := range parts {
		owner, token, oldest, paused := "-", "-", "-", "-"
		if p.Owner != "" {
			owner, token = printable(p.Owner), "#"+strconv.FormatInt(p.Token, 10)
			owned[owner]++
		}
		if p.OldestPendingMs > 0 {
			oldest = (time.Duration(p.OldestPendingMs) * time.Millisecond).String()
		}
		if p.Paused {
			paused = "paused"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Partition, owner, token, p.Pending, oldest,
			p.InFlight, p.Parked, p.Delayed, p.Committed, p.DeadLettered, paused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var by []string
	for _, o := range slices.Sorted(maps.Keys(owned)) {
		by = append(by, fmt.Sprintf("%s %d", o, owned[o]))
	}
	free := len(parts)
	for _, n := range owned {
		free -= n
	}
	summary := "\nno partition has an owner"
	if len(by) > 0 {
		summary = "\nowned: " + strings.Join(by, ", ")
	}
	_, err := fmt.Fprintf(w, "%s; without an owner: %d of %d\n", summary, free, len(parts))
	return err
}

// printable is s for a table cell, quoted (Go syntax) when it holds a
// rune that would not print as itself (a control character, an escape
// sequence) or a space that would shift the columns.
func printable(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return strconv.Quote(s)
	}
	return s
}
