package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/demo"
)

const usage = `usage: lockworker [COMMAND] [-h]

With no command, runs one replica: it competes for the lock in Redis, and
while it leads it processes the job queue, each key's jobs one at a time,
in order;
SIGTERM, SIGINT or SIGHUP stop it after it released the lock. The other
commands read or act on the same Redis and need no running replica.

commands:
  (none)       run a replica: compete for the lock, lead, process jobs
  status       show who holds the lock, the queue and the live replicas
  history      list leaderships and how each predecessor ended
  partitions   list every partition: its owner, token and queue
  stepdown     ask the leader to step down; another replica takes over
  pause        stop the leader from taking new jobs (it keeps the lock)
  resume       undo pause
  enqueue      add a job, or one job per line of stdin (--lines); later
               (--in, --at) or once per idempotency key
  delayed      list the delayed jobs not yet due
  schedule     add, list or remove periodic jobs (every D, or cron)
  deadletters  list dead-lettered jobs with their errors
  requeue      move dead letters back to the head of their keys
  parked       list the keys held after a job failed for good
  retry        run a parked key's failing job again; its jobs follow
  skip         dead-letter a parked key's failing job; its jobs follow
  epoch        print the fencing epoch, or raise it after a restore
  graph        print the state chart (DOT or Mermaid)
  version      print the version, Go and module versions (also --version)
  healthcheck  exit 0 when the replica on PORT answers /healthz
  demo         start a Redis and 3 replicas, show handover and failover

lockworker COMMAND -h explains a command. Settings come from the
environment (REDIS_URLS, LOCK_TTL, ...): see the README's Configuration
table or .env.example.`

// redisSettings ends the help of every command that talks to Redis.
const redisSettings = `It finds Redis and the lock as the daemon does, from the environment
(REDIS_MODE, REDIS_URLS, LOCK_KEY, ...), and needs no running replica.`

// run is the whole program; main only adds signals and the exit code.
// Every command parses its own flags first, so -h answers before any
// configuration is read; only then does it load the configuration, if
// it needs one.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "":
		cfg, err := loadConfig(getenv)
		if err != nil {
			return err
		}
		return runDaemon(ctx, cfg, stdout)
	case "help", "-h", "-help", "--help":
		return runHelp(args, stdout)
	case "graph":
		return runGraph(args, stdout)
	case "version", "--version":
		return runVersion(args, stdout)
	case "demo":
		return runDemo(ctx, args, getenv, stdout)
	case "status":
		return runStatus(ctx, getenv, args, stdout)
	case "enqueue":
		return runEnqueue(ctx, getenv, args, stdin, stdout)
	case "delayed":
		return runDelayed(ctx, getenv, args, stdout)
	case "schedule":
		return runSchedule(ctx, getenv, args, stdin, stdout)
	case "deadletters":
		return runDeadLetters(ctx, getenv, args, stdout)
	case "requeue":
		return runRequeue(ctx, getenv, args, stdout)
	case "parked":
		return runParked(ctx, getenv, args, stdout)
	case "retry":
		return runRetry(ctx, getenv, args, stdout)
	case "skip":
		return runSkip(ctx, getenv, args, stdout)
	case "history":
		return runHistory(ctx, getenv, args, stdout)
	case "partitions":
		return runPartitions(ctx, getenv, args, stdout)
	case "stepdown":
		return runStepDown(ctx, getenv, args, stdout)
	case "pause":
		return runPause(ctx, getenv, args, stdout)
	case "resume":
		return runResume(ctx, getenv, args, stdout)
	case "epoch":
		return runEpoch(ctx, getenv, args, stdout)
	case "healthcheck":
		return runHealthcheck(ctx, getenv, args, stdout)
	}
	return usageError("", "unknown command %q", cmd)
}

// runHelp is lockworker -h, and lockworker help [COMMAND]: a command's
// help is what COMMAND -h prints.
func runHelp(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		_, err := fmt.Fprintln(stdout, usage)
		return err
	case len(args) > 1 || args[0] == "" || args[0] == "help" || strings.HasPrefix(args[0], "-"):
		return usageError("help", "want one command, got %q", args)
	}
	return run(context.Background(), []string{args[0], "-h"}, func(string) string { return "" }, strings.NewReader(""), stdout, io.Discard)
}

// loadConfig reads the configuration; its errors, one per variable, mean
// exit 2.
func loadConfig(getenv func(string) string) (config.Config, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return config.Config{}, fmt.Errorf("%w:\n%w", config.ErrInvalid, err)
	}
	return cfg, nil
}

// exitError carries a process exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad command line: exit 2, and one line that points at
// the command's help (or, for cmd "", at the list of commands) instead of
// repeating it.
func usageError(cmd, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cmd == "" {
		return &exitError{code: 2, err: fmt.Errorf("%s (lockworker -h lists the commands)", msg)}
	}
	return &exitError{code: 2, err: fmt.Errorf("%s: %s (lockworker %s -h for help)", cmd, msg, cmd)}
}

// inputError is input a command refuses (a payload, a line): exit 2, as
// for a bad command line, but its message says all there is to fix.
func inputError(format string, args ...any) error {
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
// help is true when -h or --help was given and the command's help went to
// stdout; a bad flag is a usage error (exit 2) naming the subcommand.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout io.Writer) (helped bool, err error) {
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		_, err = fmt.Fprintln(stdout, help)
		return true, err
	}
	if err != nil {
		return false, usageError(fs.Name(), "%v", err)
	}
	return false, nil
}

// noArgs parses the flags of a command that takes no arguments.
func noArgs(fs *flag.FlagSet, args []string, help string, stdout io.Writer) (helped bool, err error) {
	if helped, err = parseFlags(fs, args, help, stdout); helped || err != nil {
		return helped, err
	}
	if fs.NArg() > 0 {
		return false, usageError(fs.Name(), "unexpected arguments %q", fs.Args())
	}
	return false, nil
}

// newLogger writes to w with workerId on every line, and routes go-redis's
// own log lines through it.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == config.LogJSON {
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
