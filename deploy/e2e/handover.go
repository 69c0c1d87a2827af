package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
)

// handoverLimit is the bound on a graceful handover.
const handoverLimit = time.Second

// handoverSample is one `docker stop` of the leader.
type handoverSample struct {
	from, to string        // workerIds
	signal   time.Duration // old leader's STOP transition (SIGTERM received) → new leader's to=working line
	cli      time.Duration // `docker stop` called → the same line
	release  time.Duration // old leader's releasing_lock → idle line → the same line
}

// handover stops the leader with `docker stop` and measures until another
// worker leads, within handoverLimit of the call; the stopped one must exit 0.
func (st *stack) handover(ctx context.Context, leader container) (container, error) {
	t0 := time.Now()
	if _, err := docker(ctx, "stop", leader.ID); err != nil {
		return container{}, err
	}
	next, won, err := st.newLeader(ctx, leader, t0, 10*time.Second)
	if err != nil {
		return container{}, err
	}
	old, err := refresh(ctx, leader)
	if err != nil {
		return container{}, err
	}
	if old.Running || old.ExitCode != 0 {
		return container{}, fmt.Errorf("%s after docker stop: %s, exit code %d; want exited, 0", old, old.Status, old.ExitCode)
	}
	lines, err := containerLog(ctx, old)
	if err != nil {
		return container{}, err
	}
	s := handoverSample{from: st.ids[leader.ID], to: st.ids[next.ID], cli: won.at.Sub(t0)}
	var stopped, released bool
	for _, l := range lines {
		if l.at.Before(t0) {
			continue
		}
		if !stopped && l.msg == "transition" && l.attrs["trigger"] == machine.Stop.String() {
			s.signal, stopped = won.at.Sub(l.at), true
		}
		if !released && l.isTransition(machine.ReleasingLock, machine.Idle) {
			s.release, released = won.at.Sub(l.at), true
		}
	}
	if !stopped || !released {
		return container{}, fmt.Errorf("%s logged no STOP transition or no release after docker stop", old)
	}
	if s.cli > handoverLimit {
		return container{}, fmt.Errorf("%s led %s after docker stop began, want within %s", next, s.cli, handoverLimit)
	}
	st.res.handover = s
	st.progress("handover: %s leads %s after SIGTERM reached the leader", next, ms(s.signal))
	return next, st.confirm(ctx, next)
}

// failoverSample is one `docker kill -s KILL` of the leader. The signal
// leaves somewhere in the engine's handling of the call, so took and
// leaseLeft are measured from the call; their difference, the time from
// the lease's end to the new leader, does not depend on that moment.
type failoverSample struct {
	from, to  string
	took      time.Duration // `docker kill` called → new leader's to=working line
	leaseLeft time.Duration // killed leader's last to=working line + LOCK_TTL - the call
	exitCode  int
}

// failover kills the leader and measures until another worker leads. The
// new leader must not lead before the killed one's lease can have run
// out: the start of its last successful acquire or renew + LOCK_TTL.
func (st *stack) failover(ctx context.Context, leader container) (container, error) {
	t0 := time.Now()
	if _, err := docker(ctx, "kill", "-s", "KILL", leader.ID); err != nil {
		return container{}, err
	}
	next, won, err := st.newLeader(ctx, leader, t0, st.s.ttl+st.s.retry+10*time.Second)
	if err != nil {
		return container{}, err
	}
	// The log of the dead ends where SIGKILL struck.
	lines, err := containerLog(ctx, leader)
	if err != nil {
		return container{}, err
	}
	leaseStart, leaseEnd, err := lastLease(lines)
	if err != nil {
		return container{}, fmt.Errorf("%s: %w", leader, err)
	}
	if floor := leaseStart.Add(st.s.ttl); won.at.Before(floor) {
		return container{}, fmt.Errorf("%s led at %s, before the killed leader's lease could end (%s)",
			next, won.at.Format(time.RFC3339Nano), floor.Format(time.RFC3339Nano))
	}
	old, err := refresh(ctx, leader)
	if err != nil {
		return container{}, err
	}
	if old.Running {
		return container{}, fmt.Errorf("%s runs again after docker kill (restart policy?)", old)
	}
	st.res.failover = failoverSample{from: st.ids[leader.ID], to: st.ids[next.ID], took: won.at.Sub(t0),
		leaseLeft: leaseEnd.Add(st.s.ttl).Sub(t0), exitCode: old.ExitCode}
	st.progress("failover: %s leads %s after docker kill", next, ms(st.res.failover.took))
	return next, st.confirm(ctx, next)
}

// lastLease finds the leader's last successful acquire or renew in its
// log: the transition into acquiring_lock or renew_lock that started it
// (the lease was set after it) and the transition into working that ended
// it (the lease was set before it).
func lastLease(lines []logLine) (start, end time.Time, err error) {
	for i := len(lines) - 1; i >= 0 && start.IsZero(); i-- {
		l := lines[i]
		switch {
		case end.IsZero() && l.isTransition(anyState, machine.Working):
			end = l.at
		case !end.IsZero() && (l.isTransition(anyState, machine.RenewLock) || l.isTransition(anyState, machine.AcquiringLock)):
			start = l.at
		}
	}
	if start.IsZero() {
		return start, end, fmt.Errorf("no acquire or renew followed by to=working in the log")
	}
	return start, end, nil
}

// confirm checks that status names next as the holder, and that no other
// running worker leads.
func (st *stack) confirm(ctx context.Context, next container) error {
	leader, err := st.steady(ctx)
	if err != nil {
		return err
	}
	if leader.ID != next.ID {
		return fmt.Errorf("%s took over, but %s leads now", next, leader)
	}
	return nil
}
