package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/schedule"
)

const scheduleUsage = `usage: lockworker schedule add NAME (--every D | --cron EXPR [--tz ZONE]) [--key K]
                           [--catch-up once|skip] [--] PAYLOAD...
       lockworker schedule list [--json]
       lockworker schedule remove NAME

add stores a schedule in Redis: at each tick the leader of its partition
(its key's, or its name's without a key) enqueues one job with the
payload (the arguments joined by spaces, or stdin when there are none),
exactly once per tick, fenced. NAME: 1 to 200 letters, digits and . _ : -
  --every D          tick every D (a Go duration, 1s to 366 days), on the
                     multiples of D since the Unix epoch (every 1h: on the
                     hour, UTC)
  --cron EXPR        tick at the times of a standard cron expression (five
                     fields: minute hour day-of-month month day-of-week,
                     or @hourly, @daily, ...)
  --tz ZONE          read --cron in this IANA zone (default UTC)
  --key K            the ordering key of the ticks' jobs (default none)
  --catch-up once    ticks missed while no replica could lead the
                     partition run once, as one job for the latest of
                     them, before the current tick (the default)
  --catch-up skip    missed ticks do not run; only the current tick does
A tick's job carries LOCKWORKER_SCHEDULE and LOCKWORKER_SCHEDULED_AT
(exec) or Lockworker-Schedule and Lockworker-Scheduled-At (http).

list shows each schedule: its times, key, partition, last tick enqueued
and next tick. --json prints them as a JSON array.

remove deletes a schedule; no tick of it is enqueued afterwards (its jobs
already enqueued stay).

` + redisSettings

// runSchedule is lockworker schedule add|list|remove.
func runSchedule(ctx context.Context, getenv func(string) string, args []string, in io.Reader, stdout io.Writer) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "add":
		return runScheduleAdd(ctx, getenv, args, in, stdout)
	case "list":
		return runScheduleList(ctx, getenv, args, stdout)
	case "remove":
		return runScheduleRemove(ctx, getenv, args, stdout)
	case "-h", "-help", "--help":
		_, err := fmt.Fprintln(stdout, scheduleUsage)
		return err
	case "":
		return usageError("schedule", "give add, list or remove")
	}
	return usageError("schedule", "unknown subcommand %q: give add, list or remove", sub)
}

// scheduleFlags are schedule add's flags.
type scheduleFlags struct {
	fs            *flag.FlagSet
	every         time.Duration
	cron, tz, key string
	catchUp       string
}

func newScheduleFlags() *scheduleFlags {
	f := &scheduleFlags{fs: flag.NewFlagSet("schedule", flag.ContinueOnError)}
	f.fs.DurationVar(&f.every, "every", 0, "tick every this long")
	f.fs.StringVar(&f.cron, "cron", "", "tick at the times of this cron expression")
	f.fs.StringVar(&f.tz, "tz", "", "the zone of --cron")
	f.fs.StringVar(&f.key, "key", "", "the ordering key of the ticks' jobs")
	f.fs.StringVar(&f.catchUp, "catch-up", "once", "once or skip")
	return f
}

// runScheduleAdd is schedule add NAME [flags] PAYLOAD: the name may come
// before the flags, as the usage shows it, or after them.
func runScheduleAdd(ctx context.Context, getenv func(string) string, args []string, in io.Reader, stdout io.Writer) error {
	f := newScheduleFlags()
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if help, err := parseFlags(f.fs, args, scheduleUsage, stdout); help || err != nil {
		return err
	}
	rest := f.fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	s, err := f.schedule(name)
	if err != nil {
		return err
	}
	if s.Payload, err = readPayload(rest, in); err != nil {
		return err
	}
	if _, err := jobs.CheckSchedule(s); err != nil {
		return inputError("schedule add: %s", reason(err))
	}
	p, ctx, done, err := oneShot(ctx, "schedule", getenv)
	if err != nil {
		return err
	}
	defer done()
	switch err := p.Queues.AddSchedule(ctx, s); {
	case errors.Is(err, jobs.ErrScheduleExists):
		return say(err, "schedule add: a schedule named %s exists; lockworker schedule remove %s first", name, name)
	case err != nil:
		return failed("schedule add", "store the schedule", err)
	}
	return printAdded(ctx, p.Queues, name, stdout)
}

// printAdded says where the schedule name was added, and its next tick.
func printAdded(ctx context.Context, r *jobs.Router, name string, stdout io.Writer) error {
	list, err := r.Schedules(ctx)
	if err != nil {
		return failed("schedule add", "read it back", err)
	}
	for _, sc := range list {
		if sc.Name == name {
			_, err = fmt.Fprintf(stdout, "schedule %s added to partition %d; next tick %s\n", name, sc.Partition, sc.NextTick.Format(time.RFC3339))
		}
	}
	return err
}

// schedule is the schedule the flags describe, its payload aside.
func (f *scheduleFlags) schedule(name string) (jobs.Schedule, error) {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	switch {
	case name == "":
		return jobs.Schedule{}, usageError("schedule", "add needs a NAME")
	case given["every"] == given["cron"]:
		return jobs.Schedule{}, usageError("schedule", "give --every or --cron, one of them")
	case given["tz"] && !given["cron"]:
		return jobs.Schedule{}, usageError("schedule", "--tz goes with --cron")
	case given["key"]:
		if err := jobs.CheckKey(f.key); err != nil {
			return jobs.Schedule{}, usageError("schedule", "--key %q: %s; leave --key out for jobs without a key", f.key, reason(err))
		}
	}
	c, err := schedule.ParseCatchUp(f.catchUp)
	if err != nil {
		return jobs.Schedule{}, usageError("schedule", "--catch-up must be once or skip, got %q", f.catchUp)
	}
	return jobs.Schedule{Name: name, When: schedule.When{Every: f.every, Cron: f.cron, TZ: f.tz}, Key: f.key, CatchUp: c}, nil
}

// runScheduleList prints every schedule.
func runScheduleList(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := noArgs(fs, args, scheduleUsage, stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, "schedule", getenv)
	if err != nil {
		return err
	}
	defer done()
	list, err := p.Queues.Schedules(ctx)
	if err != nil {
		return failed("schedule list", "read the schedules", err)
	}
	if *asJSON {
		if list == nil {
			list = []figures.Schedule{}
		}
		return printJSON(stdout, list)
	}
	return printSchedules(stdout, list, time.Now())
}

// printSchedules is the table of schedules that schedule list and status
// print.
func printSchedules(w io.Writer, list []figures.Schedule, now time.Time) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no schedules (lockworker schedule add)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tKEY\tPARTITION\tCATCH-UP\tLAST TICK\tNEXT TICK")
	for _, s := range list {
		when := "every " + s.Every
		if s.Every == "" {
			when = "cron " + s.Cron
			if s.TZ != "" {
				when += " (" + s.TZ + ")"
			}
		}
		key := "-"
		if s.Key != "" {
			key = printable(s.Key)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, when, key, s.Partition, s.CatchUp, tickCell(s.LastTick, now), tickCell(s.NextTick, now))
	}
	return tw.Flush()
}

// tickCell is a tick's time in a table, with how long ago or until; "-"
// for none.
func tickCell(t, now time.Time) string {
	switch {
	case t.IsZero():
		return "-"
	case t.After(now):
		return fmt.Sprintf("%s (in %s)", t.Format(time.RFC3339), t.Sub(now).Round(time.Second))
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

// runScheduleRemove deletes a schedule.
func runScheduleRemove(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	if help, err := parseFlags(fs, args, scheduleUsage, stdout); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("schedule", "remove needs one NAME")
	}
	name := fs.Arg(0)
	p, ctx, done, err := oneShot(ctx, "schedule", getenv)
	if err != nil {
		return err
	}
	defer done()
	switch err := p.Queues.RemoveSchedule(ctx, name); {
	case errors.Is(err, jobs.ErrNoSchedule):
		return say(err, "schedule remove: no schedule is named %s (lockworker schedule list)", name)
	case err != nil:
		return failed("schedule remove", "remove the schedule", err)
	}
	_, err = fmt.Fprintf(stdout, "schedule %s removed\n", name)
	return err
}
