package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/demo"
)

const usage = `usage: lockworker [command]

commands:
  (none)       run a replica: compete for the lock, lead, process jobs
  status       show who holds the lock, the queue and the live replicas: [--json]
  history      list leaderships and how each predecessor ended: [--n N] [--json]
  stepdown     ask the leader to step down; another replica takes over
  pause        stop the leader from taking new jobs (it keeps the lock)
  resume       undo pause
  enqueue      add a job: lockworker enqueue PAYLOAD, or the payload on stdin;
               --lines: one job per line of stdin, all or none
  deadletters  list dead-lettered jobs with their errors: [--n N] [--json]
  requeue      move dead letters back to the queue: lockworker requeue ID...
  epoch        print the fencing epoch, or repair it: [--raise-to N]
  graph        print the state chart: --format dot (default) or mermaid
  version      print the version, Go and module versions (also --version)
  healthcheck  exit 0 when the replica on PORT answers /healthz
  demo         start a Redis and 3 replicas, show handover and failover

Settings come from the environment; see the README or .env.example.`

// run is the whole program; main only adds signals and the exit code.
// Commands that need no configuration come first.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "graph":
		return runGraph(args, stdout)
	case "version", "--version":
		return runVersion(args, stdout)
	case "help", "-h", "--help":
		_, err := fmt.Fprintln(stdout, usage)
		return err
	case "demo":
		return runDemo(ctx, args, getenv, stdout)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("%w:\n%w", config.ErrInvalid, err)
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
	case "history":
		return runHistory(ctx, cfg, args, stdout)
	case "stepdown":
		return runStepDown(ctx, cfg, args, stdout)
	case "pause":
		return runPause(ctx, cfg, args, stdout)
	case "resume":
		return runResume(ctx, cfg, args, stdout)
	case "epoch":
		return runEpoch(ctx, cfg, args, stdout)
	case "healthcheck":
		return runHealthcheck(ctx, cfg)
	}
	return usageError("unknown command %q\n%s", cmd, usage)
}

// exitError carries a process exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad command line: exit 2, as for bad configuration.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// exitCode maps run's error to the process's exit status: 0, 2 for bad
// configuration or usage, 130 for an interrupted demo, else 1.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, config.ErrInvalid):
		return 2
	case errors.Is(err, demo.ErrInterrupted):
		return 130
	}
	return 1
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

// newLogger writes to w with workerId on every line, and routes go-redis's
// own log lines through it.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.Level()
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	log := slog.New(h).With("workerId", cfg.WorkerID)
	redis.SetLogger(backend.RedisLogger(log))
	return log
}

// printJSON writes v as indented JSON, for the --json flags.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
