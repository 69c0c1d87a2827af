package daemon

import (
	"strings"
	"testing"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/leader"
)

// A lane's reason never carries what a job's handler wrote: the error of
// a work that ended is given by its class; the other reasons are the
// lane's own words.
func TestLaneReasonHidesHandlerOutput(t *testing.T) {
	d := &Daemon{cfg: config.Config{}}
	got := d.laneReason(leader.Reason{Kind: leader.WorkEnded, Err: "jobs: guest: exit status 3: invalid invoice 7731"})
	if strings.Contains(got, "invoice") || !strings.HasPrefix(got, "work ended (") {
		t.Fatalf("a work's end gives %q: want its class, not its output", got)
	}
	held := leader.Reason{Kind: leader.HeldElsewhere, Holder: "w1", Token: 7}
	if got := d.laneReason(held); got != held.String() {
		t.Fatalf("a held lock gives %q, want %q", got, held.String())
	}
}
