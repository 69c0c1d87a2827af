package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// redisNodeSample is the Redlock stack's stop of one Redis.
type redisNodeSample struct {
	node     string
	renewals int           // the leader's renewals while the node was down
	span     time.Duration // from the stop to the last of them
	token    int64
}

// redisNodes is the stack's Redis containers, in service order.
func (st *stack) redisNodes(ctx context.Context) ([]container, error) {
	all, err := st.p.containers(ctx, "")
	if err != nil {
		return nil, err
	}
	var nodes []container
	for _, c := range all {
		if c.Service != "worker" {
			nodes = append(nodes, c)
		}
	}
	return nodes, nil
}

// redisNodeDown stops the last Redis (the first holds the epoch and the
// jobs, so the rest of the run needs it) and checks that the leader keeps
// leading through renewals spanning more than LOCK_TTL: it never leaves
// working or renew_lock, no follower leads, the token stays. Then the
// node starts again and the check waits until it is healthy.
func (st *stack) redisNodeDown(ctx context.Context, leader container, node container) error {
	before, err := st.statusVia(ctx)
	if err != nil {
		return err
	}
	if _, err := docker(ctx, "stop", node.ID); err != nil {
		return err
	}
	stopped := time.Now()
	s := redisNodeSample{node: node.Service, token: before.Token}
	want := int(st.s.ttl/st.s.renew) + 2
	err = waitFor(ctx, 3*st.s.ttl+10*time.Second, fmt.Sprintf("%d renewals with %s down", want, node.Service), func() (bool, string, error) {
		lines, err := containerLog(ctx, leader)
		if err != nil {
			return false, "", err
		}
		s.renewals = 0
		for _, l := range lines {
			if l.at.Before(stopped) || l.msg != "transition" {
				continue
			}
			switch to := l.attrs["to"]; {
			case l.isTransition(machine.RenewLock, machine.Working):
				s.renewals++
				s.span = l.at.Sub(stopped)
			case to != machine.RenewLock.String():
				return false, "", fmt.Errorf("with %s down the leader %s went %s → %s (%s)", node.Service, leader, l.attrs["from"], to, l.attrs["err"])
			}
		}
		return s.renewals >= want && s.span > st.s.ttl, fmt.Sprintf("%d renewals", s.renewals), nil
	})
	if err != nil {
		return err
	}
	if err := st.confirm(ctx, leader); err != nil {
		return err
	}
	after, err := st.statusVia(ctx)
	if err != nil {
		return err
	}
	if after.Holder != before.Holder || after.Token != before.Token {
		return fmt.Errorf("with %s down: holder %s token %d, before %s token %d", node.Service, after.Holder, after.Token, before.Holder, before.Token)
	}
	st.res.redisNode = &s
	return st.restart(ctx, node)
}

// restart starts a stopped container and waits until it is healthy.
func (st *stack) restart(ctx context.Context, c container) error {
	if _, err := docker(ctx, "start", c.ID); err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, c.String()+" healthy again", func() (bool, string, error) {
		c, err := refresh(ctx, c)
		if err != nil {
			return false, "", err
		}
		return c.Running && c.Health == "healthy", c.Status + "/" + c.Health, nil
	})
}
