package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lockworker/lockworker/internal/demo"
	"github.com/lockworker/lockworker/internal/partition"
)

const demoUsage = `usage: lockworker demo [--verbose] [--partitions P]

Starts a Redis of its own (redis-server from PATH, on a free loopback
port, in a temporary directory) and 3 replicas of this binary, enqueues a few
jobs, shows who leads, sends SIGTERM to the leader (a graceful handover
in milliseconds), kill -9s the next one (a failover once its lease of
LOCK_TTL 3s ran out), prints the timeline and the fencing tokens, and
stops everything it started, Ctrl-C included. It takes about 8 seconds
and reads no configuration.

With --partitions P (2 to 1024; 8 shows it best) the 3 replicas share P
partitions instead: who leads how many, keyed jobs (enqueue --key), a
SIGTERM whose partitions each lead elsewhere within milliseconds, a
kill -9 whose partitions are taken once their leases ran out, and the
time each partition took (about 8 seconds too).
  --verbose       stream the replicas' logs
  --partitions P  the story of a fleet sharing P partitions (PARTITIONS)`

// runDemo tells the product's story with real processes: this binary,
// re-executed as replicas.
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	verbose := fs.Bool("verbose", false, "stream the replicas' logs")
	parts := fs.Int("partitions", 1, "the story of a fleet sharing P partitions")
	if help, err := noArgs(fs, args, demoUsage, stdout); help || err != nil {
		return err
	}
	if *parts < 1 || *parts > partition.Max {
		return usageError("demo", "--partitions: from 1 to %d, got %d", partition.Max, *parts)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find this binary: %w", err)
	}
	return demo.Run(ctx, demo.Config{Exe: exe, Out: stdout, Verbose: *verbose, Path: getenv("PATH"), Partitions: *parts})
}
