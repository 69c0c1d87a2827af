package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/machine"
)

// kind is how the leader is stopped.
type kind string

const (
	graceful kind = "graceful" // SIGTERM: stop work, release, publish a notice
	crash    kind = "crash"    // kill -9: the lock stays until its lease ends
)

// sample is one handover.
type sample struct {
	took    time.Duration // signal sent → new leader's transition to working
	lease   time.Duration // crash only: the killed leader's lease left at the signal
	wokenBy string        // what moved the new leader out of waiting_to_acquire_lock
	from    string        // the old leader
	to      string        // the new leader
}

// cluster is the replicas of one lock key, all started from one binary,
// on one Redis topology.
type cluster struct {
	opts    options
	fleet   *fleet.Fleet
	rec     *recorder
	mode    string // the topology's REDIS_MODE
	topo    *topology
	notices bool
	live    []*fleet.Process
	started int
	warn    func(format string, args ...any)
}

func (c *cluster) prefix() string {
	if c.notices {
		return c.mode + "-on"
	}
	return c.mode + "-off"
}

func (c *cluster) lockKey() string { return "handoverbench:" + c.prefix() }

// env is replica name's environment.
func (c *cluster) env(name string) []string {
	return append([]string{
		"LOCK_KEY=" + c.lockKey(),
		"LOCK_TTL=" + c.opts.ttl.String(),
		"RENEW_INTERVAL=" + c.opts.renew.String(),
		"RETRY_INTERVAL=" + c.opts.retry.String(),
		"RELEASE_NOTICES=" + strconv.FormatBool(c.notices),
		"SHUTDOWN_TIMEOUT=5s",
		"WORK_DURATION=20ms",
		"LOG_FORMAT=json",
		"LOG_LEVEL=debug", // the renewals and retries timed here are logged at DEBUG
		"WORKER_ID=" + name,
	}, c.topo.env...)
}

// start adds a replica.
func (c *cluster) start() error {
	c.started++
	name := c.prefix() + "-" + strconv.Itoa(c.started)
	env := c.env(name)
	var out io.Writer = c.rec.writer(name)
	if c.opts.logs != nil {
		out = io.MultiWriter(out, c.opts.logs)
	}
	p, err := c.fleet.Start(fleet.Spec{Name: name, Path: c.opts.bin, Env: env, Output: out})
	if err != nil {
		return err
	}
	c.live = append(c.live, p)
	return nil
}

// steady waits until one replica leads and every other one waits for the
// lock, so each round starts with followers ready to take over, and returns
// the leader. It polls /status: no timing is read from it.
func (c *cluster) steady(ctx context.Context) (*fleet.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*c.opts.ttl+c.opts.retry+10*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	waitingState := machine.WaitingToAcquireLock.String()
	for {
		var leaders []*fleet.Process
		waiting := 0
		for _, p := range c.live {
			if p.Exited() {
				return nil, fmt.Errorf("%s exited: %v\n%s", p, p.Err(), tail(p.Output(), 2000))
			}
			s, err := p.Status(ctx)
			switch {
			case err != nil:
			case s.Leader:
				leaders = append(leaders, p)
			case s.State == waitingState:
				waiting++
			}
		}
		if len(leaders) == 1 && waiting == len(c.live)-1 {
			return leaders[0], nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("replicas not steady (%d leaders, %d of %d waiting): %w",
				len(leaders), waiting, len(c.live), ctx.Err())
		case <-tick.C:
		}
	}
}

// round stops leader the given way, measures until another replica is in
// working, starts a replacement and waits until the cluster is steady
// again. It returns the sample and the new leader.
func (c *cluster) round(ctx context.Context, leader *fleet.Process, k kind) (sample, *fleet.Process, error) {
	// A random pause spreads the signal over the renew and retry cycles, so
	// the samples cover every phase rather than one.
	select {
	case <-time.After(rand.N(c.opts.renew)):
	case <-ctx.Done():
		return sample{}, nil, ctx.Err()
	}
	mark := c.rec.mark()
	t0 := time.Now()
	var err error
	if k == graceful {
		err = leader.Terminate()
	} else {
		err = leader.Kill()
	}
	if err != nil {
		return sample{}, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.ttl+c.opts.retry+10*time.Second)
	won, at, err := c.rec.await(wctx, mark, func(t transition) bool {
		return t.replica != leader.Name && t.from == machine.AcquiringLock.String() && t.to == machine.Working.String()
	})
	cancel()
	if err != nil {
		return sample{}, nil, fmt.Errorf("no new leader after the %s of %s: %w", k, leader.Name, err)
	}
	s := sample{took: won.at.Sub(t0), from: leader.Name, to: won.replica}
	if w, ok := c.rec.lastBefore(at, func(t transition) bool {
		return t.replica == won.replica && t.to == machine.AcquiringLock.String()
	}); ok {
		s.wokenBy = w.trigger
	}
	if k == crash {
		// The lease ends TTL after the last successful acquire or renew;
		// its transition to working is logged a round trip after Redis
		// set the expiry, so this overstates the lease by at most that.
		last, ok := c.rec.lastBefore(mark, func(t transition) bool {
			return t.replica == leader.Name && t.to == machine.Working.String()
		})
		if ok {
			s.lease = last.at.Add(c.opts.ttl).Sub(t0)
		}
	}

	if err := c.retire(ctx, leader, k); err != nil {
		return sample{}, nil, err
	}
	if err := c.start(); err != nil {
		return sample{}, nil, err
	}
	next, err := c.steady(ctx)
	if err != nil {
		return sample{}, nil, err
	}
	if next.Name != won.replica {
		c.warn("%s measured %s as the new leader, but %s leads now", k, won.replica, next.Name)
	}
	for _, t := range c.rec.since(mark) {
		if t.from == machine.AcquiringLock.String() && t.to == machine.Working.String() && t.replica != won.replica {
			c.warn("%s round: %s also became leader at %s", k, t.replica, t.at.Format(time.RFC3339Nano))
		}
	}
	return s, next, nil
}

// retire waits for the old leader to exit and takes it off the live list.
// After SIGTERM it must exit 0 within its shutdown budget.
func (c *cluster) retire(ctx context.Context, p *fleet.Process, k kind) error {
	c.live = slices.DeleteFunc(c.live, func(q *fleet.Process) bool { return q == p })
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := p.Wait(ctx)
	var ee *exec.ExitError
	if k == crash && errors.As(err, &ee) {
		return nil // killed, as intended
	}
	if err != nil {
		return fmt.Errorf("%s after %s: %w\n%s", p, k, err, tail(p.Output(), 2000))
	}
	return nil
}

// stop kills the remaining replicas, so they cost no CPU in the next run.
func (c *cluster) stop() {
	for _, p := range c.live {
		_ = p.Kill()
	}
	for _, p := range c.live {
		<-p.Done()
	}
	c.live = nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
