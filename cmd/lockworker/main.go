// Command lockworker runs one replica of a leader-elected worker fleet that
// shares a lock in Redis. See the README for the commands and settings,
// and docs/ for the rest.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockworker/lockworker/internal/guest"
)

func main() {
	// A job command's supervisor is this binary, re-executed (internal/guest).
	if handled, code := guest.MaybeSupervise(os.Args); handled {
		os.Exit(code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	// SIGHUP (a closed terminal, a supervisor's reload) stops the replica
	// as SIGTERM does: its default would kill it without releasing the
	// lock and leave the fleet waiting out the lease.
	stops := []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}
	signal.Notify(sigs, stops...)
	go func() {
		<-sigs
		// Default action back before anyone hears of the first signal, so
		// a second one always ends the process at once.
		signal.Reset(stops...)
		cancel()
	}()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockworker:", err)
	}
	os.Exit(exitCode(err))
}
