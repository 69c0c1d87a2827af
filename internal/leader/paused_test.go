package leader

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/lockworker/lockworker/internal/machine"
)

// A leading lane whose work says its queue is paused keeps its lease and
// gives paused as its reason, logged once at INFO; resumed, it leads with
// no reason again. A pause said by one leadership's work does not carry
// over to the next leadership.
func TestPausedLaneSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.start()
		r.wantState(machine.Working)
		mark := len(r.logs.String())
		r.lane.QueuePaused(true)
		s := r.snap()
		if !s.Leads() || s.Token != 1 || s.Reason.Kind != Paused || s.Reason.String() != "paused: taking no new job until lockworker resume" {
			t.Fatalf("paused: leads %v token %d reason %+v", s.Leads(), s.Token, s.Reason)
		}
		r.lane.QueuePaused(true) // said again: no second line
		synctest.Wait()
		lines := r.infoLines(mark)
		if len(lines) != 1 || !strings.Contains(lines[0], `msg="Leading, paused"`) || !strings.Contains(lines[0], "why=paused") {
			t.Fatalf("INFO lines after the pause: %q, want one saying paused", lines)
		}
		r.lane.QueuePaused(false)
		if s := r.snap(); !s.Leads() || s.Reason.Kind != Leading || s.Reason.String() != "" {
			t.Fatalf("resumed: leads %v reason %+v", s.Leads(), s.Reason)
		}

		// A leadership that ends while paused: the next starts unpaused.
		r.lane.QueuePaused(true)
		r.lane.StepDown(1)
		synctest.Wait()
		for r.snap().Token < 2 {
			r.gap()
		}
		if s := r.snap(); !s.Leads() || s.Reason.Kind != Leading {
			t.Fatalf("the next leadership (token %d): leads %v reason %+v, want leading, unpaused", s.Token, s.Leads(), s.Reason)
		}
	})
}
