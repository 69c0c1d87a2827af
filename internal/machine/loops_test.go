package machine

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var errHeld = errors.New("held by another holder")

// TestLoopsQuietAtInfo: a leader's renewals and a follower's retries log
// nothing at INFO (the retry's "Trying to acquire lock" is at DEBUG:
// the lane says once who leads); every step of the loops is still logged
// at DEBUG, and what changes leadership, or fails with a fault, stays at
// INFO.
func TestLoopsQuietAtInfo(t *testing.T) {
	const rounds = 5
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(h *harness) { h.lane.routine = func(err error) bool { return errors.Is(err, errHeld) } })
		h.toWaiting() // follower: the first attempt failed
		mark := len(h.logs.String())
		for range rounds {
			time.Sleep(retryDelay)
			h.next(h.acquire, "Acquire").reply(errHeld)
			h.wantState(WaitingToAcquireLock)
		}
		if follower := info(h.logs.String()[mark:]); len(follower) != 0 {
			t.Errorf("a follower's %d retries logged at INFO:\n%s", rounds, strings.Join(follower, "\n"))
		}
		if got := strings.Count(h.logs.String()[mark:], `level=DEBUG msg="Trying to acquire lock"`); got != rounds {
			t.Errorf("%d retries logged \"Trying to acquire lock\" %d times at DEBUG, want %d", rounds, got, rounds)
		}

		time.Sleep(retryDelay) // a fault is news
		h.next(h.acquire, "Acquire").reply(errFake)
		h.wantState(WaitingToAcquireLock)
		if !strings.Contains(strings.Join(info(h.logs.String()), "\n"), `trigger=ACQUIRE_FAILED err="fake failure"`) {
			t.Errorf("an attempt that failed with a fault is not at INFO:\n%s", h.logs.String())
		}

		time.Sleep(retryDelay) // leader from here on
		h.next(h.acquire, "Acquire").reply(nil)
		h.wantState(Working)
		mark = len(h.logs.String())
		for range rounds {
			time.Sleep(renewInterval)
			h.next(h.renew, "Renew").reply(nil)
			h.wantState(Working)
		}
		if leader := info(h.logs.String()[mark:]); len(leader) != 0 {
			t.Errorf("a leader's %d renewals logged at INFO:\n%s", rounds, strings.Join(leader, "\n"))
		}
		if got := strings.Count(h.logs.String()[mark:], "level=DEBUG msg=transition "); got != 2*rounds {
			t.Errorf("%d renewals logged %d transitions at DEBUG, want %d", rounds, got, 2*rounds)
		}

		h.m.Stop()
		h.stopThroughCleanup()
		all := strings.Join(info(h.logs.String()), "\n")
		for _, want := range []string{
			"from=idle to=acquiring_lock trigger=TRY_ACQUIRE_LOCK",
			"from=acquiring_lock to=working trigger=LOCK_ACQUIRED",
			`msg="Lock acquired. Starting work"`,
			"from=working to=cleanup trigger=STOP",
			`msg="Releasing lock"`,
			"from=releasing_lock to=idle trigger=LOCK_RELEASED",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("no INFO line with %s:\n%s", want, all)
			}
		}
	})
}

// info are the INFO lines of a text log.
func info(log string) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, " level=INFO ") {
			out = append(out, line)
		}
	}
	return out
}
