package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/roster"
)

// statusReport is what `lockworker status --json` prints: the lock, the
// queue's figures beside it, and the fleet.
type statusReport struct {
	LockKey     string `json:"lockKey"`
	Mode        string `json:"mode"`
	Held        bool   `json:"held"`
	Holder      string `json:"holder,omitempty"`
	Token       int64  `json:"token,omitempty"`
	LeaseLeftMs int64  `json:"leaseLeftMs"`
	// Epoch is the higher of the lock's and the queue's: it stands for
	// (and hides) Queue.Epoch in the JSON.
	Epoch int64 `json:"epoch"`
	figures.Queue
	Replicas []roster.Record `json:"replicas"`
	// Partitions is the fleet's partition count; with more than one, the
	// lock fields are empty (each partition has its own lock) and the
	// queue's figures are every partition's summed.
	Partitions int `json:"partitions"`
	// Schedules are the fleet's schedules, with their last and next ticks.
	Schedules []figures.Schedule `json:"schedules"`
}

const statusUsage = `usage: lockworker status [--json]

Reads the lock, the queue and the fleet registry straight from Redis and
prints the mode, which replica leads (its worker ID, fencing token and
lease left), the fencing epoch, whether the queue is paused, the pending,
delayed, committed and dead-lettered jobs and how long the oldest pending
one has waited; then the schedules (each one's last and next tick) and a
table of the live replicas (state, token, since, host, pid, version, jobs
done, last error). The lock's secret value is never shown.
  --json  the same as one JSON object

` + redisSettings

// runStatus reads the lock, the queue and the fleet registry straight from
// Redis; it needs no running daemon and shows no lock value.
func runStatus(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := noArgs(fs, args, statusUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, fs.Name(), getenv)
	if err != nil {
		return err
	}
	defer done()
	var h redislock.Holder
	if p.Partitions == 1 { // with partitions, lockworker partitions shows each lock
		if h, err = p.Lockers[0].Holder(ctx); err != nil {
			return failed("status", "read the lock", err)
		}
	}
	q, err := p.Queues.Stats(ctx)
	if err != nil {
		return failed("status", "read the queue", err)
	}
	replicas, err := p.Roster.List(ctx)
	if err != nil {
		return failed("status", "read the fleet registry", err)
	}
	schedules, err := p.Queues.Schedules(ctx)
	if err != nil {
		return failed("status", "read the schedules", err)
	}
	r := statusReport{
		LockKey: p.Keys.Key(), Mode: string(p.Mode()), Held: h.Held, Holder: h.WorkerID, Token: h.Token,
		LeaseLeftMs: h.TTL.Milliseconds(), Epoch: max(h.Epoch, q.Epoch), Queue: q, Replicas: replicas,
		Partitions: p.Partitions, Schedules: schedules,
	}
	if r.Replicas == nil {
		r.Replicas = []roster.Record{}
	}
	if r.Schedules == nil {
		r.Schedules = []figures.Schedule{}
	}
	if *asJSON {
		return printJSON(stdout, r)
	}
	if err := printStatus(stdout, r, p.Topology(), h.TTL); err != nil {
		return err
	}
	if len(schedules) > 0 {
		fmt.Fprintf(stdout, "\nschedules (%d)\n", len(schedules))
		if err := printSchedules(stdout, schedules, time.Now()); err != nil {
			return err
		}
	}
	return printReplicas(stdout, replicas, time.Now())
}

// printStatus is the text form of the lock and the queue.
func printStatus(w io.Writer, r statusReport, topology string, leaseLeft time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lock\t%s\n", cell(r.LockKey))
	fmt.Fprintf(tw, "mode\t%s\n", topology)
	if r.Partitions > 1 {
		fmt.Fprintf(tw, "partitions\t%d (lockworker partitions: each one's leader and queue)\n", r.Partitions)
	} else if r.Held {
		fmt.Fprintf(tw, "leader\t%s\n", cell(r.Holder))
		fmt.Fprintf(tw, "token\t%d\n", r.Token)
		fmt.Fprintf(tw, "lease left\t%s\n", leaseLeft.Round(time.Millisecond))
	} else {
		fmt.Fprintf(tw, "leader\t(none: the lock is free)\n")
	}
	if r.Partitions <= 1 {
		fmt.Fprintf(tw, "epoch\t%d\n", r.Epoch)
	}
	queue := "running"
	if r.Paused {
		queue = "paused (lockworker resume)"
	}
	fmt.Fprintf(tw, "queue\t%s\n", queue)
	fmt.Fprintf(tw, "jobs pending\t%d\n", r.Pending)
	if r.Pending > 0 {
		fmt.Fprintf(tw, "oldest waits\t%s\n", time.Duration(r.OldestPendingMs)*time.Millisecond)
	}
	if r.Delayed > 0 {
		fmt.Fprintf(tw, "jobs delayed\t%d (lockworker delayed)\n", r.Delayed)
	}
	fmt.Fprintf(tw, "jobs committed\t%d\n", r.Committed)
	fmt.Fprintf(tw, "dead letters\t%d\n", r.DeadLettered)
	return tw.Flush()
}

// printReplicas is the table of live replicas under the status.
func printReplicas(w io.Writer, replicas []roster.Record, now time.Time) error {
	fmt.Fprintf(w, "\nreplicas (%d live)\n", len(replicas))
	if len(replicas) == 0 {
		_, err := fmt.Fprintln(w, "  none has reported (a replica's record lives three refresh periods)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tSTATE\tTOKEN\tSINCE\tHOST\tPID\tVERSION\tJOBS\tLAST ERROR")
	for _, r := range replicas {
		token := "-"
		if r.Leader {
			token = "#" + strconv.FormatInt(r.Token, 10)
		}
		errText := "-"
		if r.LastError != "" {
			errText = oneLine(r.LastError, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\t%d\t%s\t%d\t%s\n", cell(r.WorkerID), cell(r.State), token,
			now.Sub(r.Since).Round(time.Second), cell(r.Host), r.PID, cell(r.Version), r.JobsDone, errText)
	}
	return tw.Flush()
}
