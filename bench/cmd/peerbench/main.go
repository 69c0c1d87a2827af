// Command peerbench measures lockworker's Redis lock against its peers,
// bsm/redislock and go-redsync/redsync v4, and against raw go-redis round
// trips, on redis-servers it starts itself; then the idle cost of a real
// lockworker leader and follower. It prints one markdown table to stdout and
// its progress to stderr. See run.go for the flags.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}
