package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lockworker/lockworker/internal/demo"
)

const demoUsage = `usage: lockworker demo [--verbose]

Starts a Redis of its own (redis-server from PATH) and 3 replicas on free
loopback ports, shows who leads, hands over on SIGTERM, fails over after
kill -9, and stops everything.
  --verbose  stream the replicas' logs`

// runDemo tells the product's story with real processes: this binary,
// re-executed as replicas.
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	verbose := fs.Bool("verbose", false, "stream the replicas' logs")
	if help, err := parseFlags(fs, args, demoUsage, stdout); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("demo: unexpected arguments %q\n%s", fs.Args(), demoUsage)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find this binary: %w", err)
	}
	return demo.Run(ctx, demo.Config{Exe: exe, Out: stdout, Verbose: *verbose, Path: getenv("PATH")})
}
