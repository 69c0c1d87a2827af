package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lockworker/lockworker/internal/config"
)

// exitError carries the process exit code: 2 for bad configuration or
// usage, as operators and init systems expect.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

const usage = `usage: lockworker [command]

commands:
  (none)       run a replica: compete for the lock, lead, process jobs
  status       show who holds the lock, its lease, the epoch and the queue
  enqueue      add a job: lockworker enqueue PAYLOAD, or the payload on stdin
  deadletters  list dead-lettered jobs with their errors: [--n N] [--json]
  requeue      move dead letters back to the queue: lockworker requeue ID...
  graph        print the state chart: --format dot (default) or mermaid
  healthcheck  exit 0 when the replica on PORT answers /healthz
  demo         start a Redis and 3 replicas, show handover and failover

Settings come from the environment; see the README or .env.example.`

// run is the whole program; main only adds signals and the exit code.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "graph":
		return runGraph(args, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	cfg, err := config.Load(environ)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("invalid configuration:\n%w", err)}
	}
	switch cmd {
	case "":
		return runDaemon(ctx, cfg, stdout)
	case "status":
		return runStatus(ctx, cfg, args, stdout)
	case "enqueue":
		return runEnqueue(ctx, cfg, args, stdin, stdout)
	case "deadletters":
		return runDeadLetters(ctx, cfg, args, stdout)
	case "requeue":
		return runRequeue(ctx, cfg, args, stdout)
	case "healthcheck":
		return runHealthcheck(ctx, cfg)
	case "demo":
		return runDemo(ctx, args, environ, stdout, stderr)
	}
	return usageError("unknown command %q\n%s", cmd, usage)
}

// parseFlags parses a subcommand's flags, which print nothing themselves.
// help is true when -h was given and usage went to stdout; a bad flag is a
// usage error (exit 2) naming the subcommand.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		_, err = fmt.Fprintln(stdout, usage)
		return true, err
	}
	if err != nil {
		return false, usageError("%s: %v (%s)", fs.Name(), err, usage)
	}
	return false, nil
}

// newLogger writes to w with workerId on every line.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.Level()
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("workerId", cfg.WorkerID)
}

// stdin is where enqueue reads a payload; tests replace it.
var stdin io.Reader = os.Stdin
