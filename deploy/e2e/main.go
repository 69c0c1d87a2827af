package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compose-e2e: FAIL:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	root     string
	images   string
	compose  string
	files    []string
	settings settings
	// partitions, above 1: partsFile is run again with PARTITIONS set so.
	partitions int
	partsFile  string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("compose-e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{settings: defaultSettings}
	fs.StringVar(&o.root, "root", ".", "the repository's root")
	fs.StringVar(&o.images, "images", "auto", "auto, official (pull the official bases, build) or standin (deploy/standin-images.sh)")
	fs.StringVar(&o.compose, "compose", "", `Compose command, "docker compose" or "docker-compose" (default: the first that answers)`)
	files := fs.String("files", "docker-compose.yml,deploy/docker-compose.redlock.yml", "compose files, comma-separated, relative to -root")
	fs.DurationVar(&o.settings.ttl, "ttl", o.settings.ttl, "LOCK_TTL")
	fs.DurationVar(&o.settings.renew, "renew", o.settings.renew, "RENEW_INTERVAL (below -ttl/2)")
	fs.DurationVar(&o.settings.retry, "retry", o.settings.retry, "RETRY_INTERVAL")
	fs.DurationVar(&o.settings.work, "work", o.settings.work, "WORK_DURATION, each job's simulated work")
	fs.IntVar(&o.partitions, "partitions", 8, "after the files, run -partitions-file again with PARTITIONS set to this (0 or 1: skip)")
	fs.StringVar(&o.partsFile, "partitions-file", "docker-compose.yml", "the compose file of the partitioned run, relative to -root")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *files != "" { // -files= runs only the partitioned run
		o.files = strings.Split(*files, ",")
	}
	return o, o.settings.validate()
}

// run checks every compose file in the machine's Docker engine, one after
// the other, and prints a summary on stdout; progress goes to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	engine, err := docker(ctx, "version", "--format", "{{.Server.Version}}")
	if err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	tool, err := detectCompose(ctx, o.compose)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "compose-e2e: engine %s, %s\n", strings.TrimSpace(engine), tool)
	images, err := prepareImages(ctx, o.root, o.images, stderr)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "compose-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var results []result
	for _, file := range o.files {
		r, err := runFile(ctx, o, tool, file, tmp, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		results = append(results, r)
	}
	if o.partitions > 1 {
		r, err := runPartitioned(ctx, o, tool, tmp, stderr)
		if err != nil {
			return fmt.Errorf("%s with PARTITIONS=%d: %w", o.partsFile, o.partitions, err)
		}
		results = append(results, r)
	}
	report(stdout, header{compose: tool.String(), engine: strings.TrimSpace(engine), images: images,
		settings: o.settings, elapsed: time.Since(t0)}, results)
	return nil
}

// runFile brings one compose file up under a project of its own, runs the
// checks, and takes it all down again, whatever happened.
func runFile(ctx context.Context, o options, tool composeTool, file, tmp string, log io.Writer) (result, error) {
	res := result{file: file}
	err := onStack(ctx, o.root, o.settings, tool, file, tmp, log, &res, func(st *stack) error { return st.run(ctx) })
	return res, err
}

// onStack brings file up with settings s under a project of its own,
// runs scenario on it, and takes it all down again, whatever happened.
func onStack(ctx context.Context, root string, s settings, tool composeTool, file, tmp string, log io.Writer, res *result, scenario func(*stack) error) error {
	path, err := filepath.Abs(filepath.Join(root, file))
	if err != nil {
		return err
	}
	p, err := newProject(tool, path, tmp, s)
	if err != nil {
		return err
	}
	res.project = p.name
	st := &stack{p: p, s: s, log: log, res: res, t0: time.Now()}
	fmt.Fprintf(log, "compose-e2e: %s: up --scale worker=%d as project %s (PARTITIONS=%d)\n", file, replicas, p.name, max(s.partitions, 1))
	err = scenario(st)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}

	// Teardown gets its own time, even after Ctrl-C.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err != nil {
		st.dumpLogs(dctx)
	}
	if derr := p.down(dctx); derr != nil {
		return errors.Join(err, fmt.Errorf("teardown: %w", derr))
	}
	fmt.Fprintf(log, "compose-e2e: %s: down -v, nothing left\n", file)
	return err
}
