package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lockworker/lockworker/internal/config"
)

// runStepDown asks the current leader to step down, through Redis (no
// daemon's HTTP port needed), and waits for another replica to lead.
func runStepDown(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if err := noArgs("stepdown", "usage: lockworker stepdown", args, stdout); err != nil {
		return orHelp(err)
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	h, err := p.Operator.StepDown(ctx)
	if err != nil {
		return err
	}
	if !h.To.Held {
		_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down after %dms; no replica leads yet\n",
			h.From.WorkerID, h.From.Token, h.Took.Milliseconds())
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s (token %d) stepped down; %s leads with token %d, %dms after the request\n",
		h.From.WorkerID, h.From.Token, h.To.WorkerID, h.To.Token, h.Took.Milliseconds())
	return err
}

// runPause stops the leader from taking new jobs, fleet-wide; it keeps
// the lock, and the job in flight finishes.
func runPause(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if err := noArgs("pause", "usage: lockworker pause", args, stdout); err != nil {
		return orHelp(err)
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := p.Operator.Pause(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, "queue paused: the leader takes no new job until lockworker resume")
	return err
}

// runResume lifts a pause.
func runResume(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	if err := noArgs("resume", "usage: lockworker resume", args, stdout); err != nil {
		return orHelp(err)
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := p.Operator.Resume(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, "queue resumed")
	return err
}

// errHelp says -h was handled: the command prints nothing more.
var errHelp = errors.New("help printed")

func orHelp(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// noArgs parses a command that takes no arguments, only -h.
func noArgs(name, usage string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	help, err := parseFlags(fs, args, usage, stdout)
	switch {
	case err != nil:
		return err
	case help:
		return errHelp
	case fs.NArg() > 0:
		return usageError("%s: unexpected arguments %q (%s)", name, fs.Args(), usage)
	}
	return nil
}
