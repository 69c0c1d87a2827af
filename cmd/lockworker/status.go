package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/lockworker/lockworker/internal/config"
)

// statusReport is what `lockworker status --json` prints.
type statusReport struct {
	LockKey      string `json:"lockKey"`
	Held         bool   `json:"held"`
	Holder       string `json:"holder,omitempty"`
	Token        int64  `json:"token,omitempty"`
	LeaseLeftMs  int64  `json:"leaseLeftMs"`
	Epoch        int64  `json:"epoch"`
	Pending      int64  `json:"pending"`
	Committed    int64  `json:"committed"`
	DeadLettered int64  `json:"deadLettered"`
}

// runStatus reads the lock and the queue straight from Redis; it needs no
// running daemon and shows no lock value.
func runStatus(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := parseFlags(fs, args, "usage: lockworker status [--json]", stdout); help || err != nil {
		return err
	}
	p, ctx, done, err := oneShot(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	h, err := p.locker.Holder(ctx)
	if err != nil {
		return fmt.Errorf("read the lock: %w", err)
	}
	q, err := p.queue.Stats(ctx)
	if err != nil {
		return fmt.Errorf("read the queue: %w", err)
	}
	r := statusReport{
		LockKey: cfg.LockKey, Held: h.Held, Holder: h.WorkerID, Token: h.Token,
		LeaseLeftMs: h.TTL.Milliseconds(), Epoch: max(h.Epoch, q.Epoch),
		Pending: q.Pending, Committed: q.Committed, DeadLettered: q.DeadLettered,
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lock\t%s\n", r.LockKey)
	if r.Held {
		fmt.Fprintf(tw, "leader\t%s\n", r.Holder)
		fmt.Fprintf(tw, "token\t%d\n", r.Token)
		fmt.Fprintf(tw, "lease left\t%s\n", h.TTL.Round(time.Millisecond))
	} else {
		fmt.Fprintf(tw, "leader\t(none: the lock is free)\n")
	}
	fmt.Fprintf(tw, "epoch\t%d\n", r.Epoch)
	fmt.Fprintf(tw, "jobs pending\t%d\n", r.Pending)
	fmt.Fprintf(tw, "jobs committed\t%d\n", r.Committed)
	fmt.Fprintf(tw, "dead letters\t%d\n", r.DeadLettered)
	return tw.Flush()
}
