package guest

import (
	"context"
	"time"
)

// tree is a started command's process tree, as Run's stop logic drives it.
type tree interface {
	// wait blocks until the tree is gone.
	wait() error
	// setDeadline passes on a lease deadline that moved.
	setDeadline(d time.Time)
	// term sends SIGTERM to the whole tree.
	term()
	// kill sends SIGKILL to the whole tree.
	kill()
	// force is the last resort when kill did not end the tree in time.
	force()
}

const (
	// deadlinePoll is how often a running command's lease deadline is
	// re-read. A renewal moves it by about RENEW_INTERVAL, which is below
	// TTL/2, so the supervisor hears of it long before the old deadline.
	deadlinePoll = 100 * time.Millisecond
	// forceAfter is how long the tree has to be gone after kill before Run
	// resorts to force. SIGKILL and reaping take milliseconds; this only
	// catches a supervisor that cannot act (stopped, or stuck).
	forceAfter = time.Second
)

// stopState is what watch did to the tree.
type stopState struct {
	stopped bool       // ctx ended and the tree was told to stop
	killed  killReason // SIGKILL was sent, and why
}

// watch waits for t while passing on deadline's moves, and when ctx ends
// stops it: SIGTERM, then SIGKILL at killTime. sent is the deadline the
// tree was started with.
func (g *Guest) watch(ctx context.Context, t tree, deadline func() time.Time, sent time.Time) (stopState, error) {
	done := make(chan error, 1)
	go func() { done <- t.wait() }()
	var poll <-chan time.Time
	if deadline != nil {
		ticker := time.NewTicker(deadlinePoll)
		defer ticker.Stop()
		poll = ticker.C
	}
	killTimer, forceTimer := idleTimer(), idleTimer()
	defer killTimer.Stop()
	defer forceTimer.Stop()
	var stop stopState
	var pending killReason
	kill := func(why killReason) {
		stop.killed = why
		t.kill()
		forceTimer.Reset(forceAfter)
	}
	ctxDone := ctx.Done()
	for {
		select {
		case err := <-done:
			return stop, err
		case <-poll:
			if d := deadline(); !d.Equal(sent) {
				sent = d
				t.setDeadline(d)
			}
		case <-ctxDone:
			ctxDone = nil
			stop.stopped = true
			at, why := killTime(time.Now(), g.cfg.Grace, deadline)
			wait := time.Until(at)
			if wait <= 0 {
				g.cfg.Logger.Warn("job command stopped past its lease deadline: killing it")
				kill(why)
				continue
			}
			g.cfg.Logger.Info("stopping job command", "grace", wait.Round(time.Millisecond).String())
			t.term()
			pending = why
			killTimer.Reset(wait)
		case <-killTimer.C:
			g.cfg.Logger.Warn("job command still running after SIGTERM: killing it", "when", string(pending))
			kill(pending)
		case <-forceTimer.C:
			g.cfg.Logger.Error("job command's supervisor did not end it after SIGKILL: killing the supervisor", "waited", forceAfter.String())
			t.force()
		}
	}
}

// killTime is when a tree told to stop at now gets SIGKILL: after grace, or
// at the lease deadline when that comes first.
func killTime(now time.Time, grace time.Duration, deadline func() time.Time) (time.Time, killReason) {
	at := now.Add(grace)
	if deadline != nil {
		if d := deadline(); !d.After(at) {
			return d, killedAtDeadline
		}
	}
	return at, killedAfterGrace
}

func idleTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
