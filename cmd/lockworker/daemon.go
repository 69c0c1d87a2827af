package main

import (
	"context"
	"io"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/daemon"
)

// runDaemon runs one replica until ctx is cancelled (SIGTERM/SIGINT), then
// stops work, releases the lock and returns within SHUTDOWN_TIMEOUT.
func runDaemon(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	d, err := daemon.New(cfg, newLogger(cfg, stdout))
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
