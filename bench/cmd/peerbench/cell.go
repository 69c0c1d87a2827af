package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// sample is one measurement of one cell.
type sample struct {
	elapsed time.Duration
	// lat holds one duration per operation: acquire+release for distinct
	// keys; for the contended cell the wait from the first try to the
	// successful acquire.
	lat []time.Duration
	// perWorker counts operations per worker (fairness when contended).
	perWorker []int
	// attempts counts acquire calls, failed ones included.
	attempts int
	// serverCPU is the CPU time the redis-servers spent during the run.
	serverCPU time.Duration
}

// measureCell runs one contender in one scenario: a warm-up (dials
// connections, loads scripts), then the measured run. Each call uses fresh
// clients and fresh keys, so no row inherits another's state.
func measureCell(ctx context.Context, sc scenario, c contender, addrs []string, rep int, o options) (sample, error) {
	var clients [][]*redis.Client // per worker: one client per node
	if sc.contended {
		for range sc.workers {
			clients = append(clients, newClients(addrs, o))
		}
	} else {
		shared := newClients(addrs, o)
		for range sc.workers {
			clients = append(clients, shared)
		}
	}
	defer func() {
		seen := map[*redis.Client]bool{}
		for _, cs := range clients {
			for _, c := range cs {
				if !seen[c] {
					seen[c] = true
					_ = c.Close()
				}
			}
		}
	}()
	locks := make([]lock, sc.workers)
	for i := range locks {
		key := fmt.Sprintf("peerbench:%s:%s:%d:%d", sc.id, c.name, rep, i)
		if sc.contended {
			key = fmt.Sprintf("peerbench:%s:%s:%d", sc.id, c.name, rep)
		}
		l, err := c.newLock(clients[i], key, fmt.Sprintf("peerbench-%d", i), o)
		if err != nil {
			return sample{}, err
		}
		locks[i] = l
	}
	if _, err := runWorkers(ctx, locks, sc.contended, o.warmup); err != nil {
		return sample{}, fmt.Errorf("warm-up: %w", err)
	}
	cpu0, err := serverCPU(ctx, clients[0])
	if err != nil {
		return sample{}, err
	}
	s, err := runWorkers(ctx, locks, sc.contended, o.cell)
	if err != nil {
		return s, err
	}
	cpu1, err := serverCPU(ctx, clients[0])
	s.serverCPU = cpu1 - cpu0
	return s, err
}

// runWorkers cycles every lock in its own goroutine for d and waits for
// all of them; the first error stops the others.
func runWorkers(ctx context.Context, locks []lock, contended bool, d time.Duration) (sample, error) {
	lats := make([][]time.Duration, len(locks))
	attempts := make([]int, len(locks))
	g, ctx := errgroup.WithContext(ctx)
	start := time.Now()
	end := start.Add(d)
	for i, l := range locks {
		g.Go(func() error {
			var err error
			if contended {
				lats[i], attempts[i], err = contend(ctx, l, end)
			} else {
				lats[i], err = cycle(ctx, l, end)
				attempts[i] = len(lats[i])
			}
			return err
		})
	}
	err := g.Wait()
	s := sample{elapsed: time.Since(start), perWorker: make([]int, len(locks))}
	for i, l := range lats {
		s.lat = append(s.lat, l...)
		s.perWorker[i] = len(l)
		s.attempts += attempts[i]
	}
	return s, err
}

// cycle acquires and releases a key no one else uses until end.
func cycle(ctx context.Context, l lock, end time.Time) ([]time.Duration, error) {
	var lat []time.Duration
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(end) {
			return lat, nil
		}
		ok, err := l.acquire(ctx)
		if err != nil {
			return lat, err
		}
		if !ok {
			return lat, errors.New("a private key was found held")
		}
		if err := l.release(ctx); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, ctx.Err()
}

// contend tries to take a key shared with the other workers until it
// wins, releases it at once, and starts over, until end. The latency is
// the wait to win; a wait cut off by end is not counted.
func contend(ctx context.Context, l lock, end time.Time) (lat []time.Duration, attempts int, err error) {
	for ctx.Err() == nil {
		t0 := time.Now()
		for {
			if !time.Now().Before(end) {
				return lat, attempts, nil
			}
			attempts++
			ok, err := l.acquire(ctx)
			if err != nil {
				return lat, attempts, err
			}
			if ok {
				break
			}
		}
		lat = append(lat, time.Since(t0))
		if err := l.release(ctx); err != nil {
			return lat, attempts, err
		}
	}
	return lat, attempts, ctx.Err()
}
