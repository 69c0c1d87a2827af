package main

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// lock is one worker's handle on one key for one library. A handle is used
// by one goroutine at a time.
type lock interface {
	// acquire tries once, without waiting; false means another holder has it.
	acquire(ctx context.Context) (bool, error)
	// release gives back what the last successful acquire took.
	release(ctx context.Context) error
}

// contender is one row of a scenario: a library, or a raw go-redis baseline.
type contender struct {
	name string
	// peer marks the libraries lockworker is compared with ("best peer").
	peer bool
	// raw marks a baseline without lock semantics.
	raw bool
	// newLock makes a handle on key over nodes (one client per Redis node)
	// for the worker named id.
	newLock func(nodes []*redis.Client, key, id string, o options) (lock, error)
}
