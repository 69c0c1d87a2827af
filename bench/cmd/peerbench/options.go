package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// options are the run's knobs. The defaults keep the measured part (all
// cells, without the idle window) to about a minute on 2 cores.
type options struct {
	// cell is the measured time of one cell in one repetition. Default 700ms.
	cell time.Duration
	// warmup runs before each measurement, to dial connections and load
	// scripts. Default 200ms.
	warmup time.Duration
	// reps is how often each cell runs; the table shows medians. Default 5.
	reps int
	// workers is the goroutine (and, contended, client) count. Default 16.
	workers int
	// redlockNodes is N for the Redlock cells. Default 5.
	redlockNodes int
	// ttl is every lock's TTL. Default 10s: no lock expires during a cell.
	ttl time.Duration
	// nodeTimeout is go-redis's dial/read/write timeout and lockworker's
	// per-node timeout. Default 1s, what the daemon takes for LOCK_TTL=15s.
	nodeTimeout time.Duration
	// idle is the idle-cost window; 0 skips it. Default 60s.
	idle time.Duration
	// bin is a lockworker binary for the idle cost; default: built from the
	// parent module.
	bin string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.cell, "cell", 700*time.Millisecond, "measured time per cell and repetition")
	fs.DurationVar(&o.warmup, "warmup", 150*time.Millisecond, "warm-up before each measurement")
	fs.IntVar(&o.reps, "reps", 5, "repetitions per cell (the table shows medians)")
	fs.IntVar(&o.workers, "workers", 16, "goroutines for the concurrent cells, clients for the contended one")
	fs.IntVar(&o.redlockNodes, "redlock-nodes", 5, "redis-servers for the Redlock cells (odd, >= 3)")
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "lock TTL for every library")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", time.Second, "go-redis dial/read/write timeout and lockworker's node timeout")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle-cost window for a real leader and follower; 0 skips it")
	fs.StringVar(&o.bin, "bin", "", "lockworker binary for the idle cost (default: go build the parent module's cmd/lockworker)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	if o.cell <= 0 || o.warmup < 0 || o.idle < 0 {
		errs = append(errs, errors.New("-cell must be positive, -warmup and -idle not negative"))
	}
	if o.reps < 1 || o.workers < 1 {
		errs = append(errs, errors.New("-reps and -workers must be at least 1"))
	}
	if o.redlockNodes < 3 || o.redlockNodes%2 == 0 {
		errs = append(errs, fmt.Errorf("-redlock-nodes must be odd and at least 3, got %d", o.redlockNodes))
	}
	if o.nodeTimeout <= 0 || o.nodeTimeout >= o.ttl {
		errs = append(errs, fmt.Errorf("-node-timeout %s must be positive and below -ttl %s", o.nodeTimeout, o.ttl))
	}
	return o, errors.Join(errs...)
}
