package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

const healthcheckUsage = `usage: lockworker healthcheck

Asks the replica on this host's PORT (default 3000) for /healthz and exits
0 when it answers 200, 1 otherwise, within 3 s. It is the container
image's health check, which has no shell or curl; it does not talk to
Redis (GET /readyz says whether the replica reaches it).`

// runHealthcheck asks the replica on PORT for /healthz, so a container
// image needs no shell or curl for its health check.
func runHealthcheck(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	if help, err := noArgs(flag.NewFlagSet("healthcheck", flag.ContinueOnError), args, healthcheckUsage, stdout); help || err != nil {
		return err
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", cfg.Port), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return say(err, "healthcheck: no answer from a replica on port %d (PORT): %s", cfg.Port, cause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: the replica on port %d answered %s to /healthz", cfg.Port, resp.Status)
	}
	return nil
}
