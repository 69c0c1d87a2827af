package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/fleet"
)

func (d *demo) waitLeader(procs []*fleet.Process, limit time.Duration) (fleet.Member, error) {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	return fleet.WaitLeader(ctx, procs, 5*time.Millisecond)
}

// waitFollowers waits until every replica but the leader is waiting for
// the lock, so what is measured next is the handover, not a start-up.
func (d *demo) waitFollowers(leader *fleet.Process, procs ...*fleet.Process) error {
	if procs == nil {
		procs = d.others(leader)
	}
	return d.poll(10*time.Second, "the other replicas to wait for the lock", func() bool {
		for _, p := range procs {
			s, err := p.Status(d.ctx)
			if err != nil || s.Leader || s.State != "waiting_to_acquire_lock" {
				return false
			}
		}
		return true
	})
}

func (d *demo) waitCommitted(p *fleet.Process, n int64, limit time.Duration) error {
	return d.poll(limit, fmt.Sprintf("%d committed jobs", n), func() bool {
		s, err := p.Status(d.ctx)
		return err == nil && s.Queue != nil && s.Queue.Committed >= n
	})
}

func (d *demo) waitExit(p *fleet.Process, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("demo: %s did not exit within %s\n%s", p.Name, limit, p.LastLines(15))
	}
}

func (d *demo) poll(limit time.Duration, what string, cond func() bool) error {
	return d.pollEvery(20*time.Millisecond, limit, what, cond)
}

func (d *demo) pollEvery(every, limit time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(d.ctx, limit)
	defer cancel()
	for !cond() {
		if !backoff.Sleep(ctx, every) {
			return fmt.Errorf("demo: waited %s for %s%s", limit, what, d.replicaLogs())
		}
	}
	return nil
}
