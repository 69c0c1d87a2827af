package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestPausedLaneAndSlotsInStatus: /status gives the replica's job slots
// (JOB_CONCURRENCY) and how many its running job holds; a partition an
// operator pauses shows "paused" as its lane's reason while the lane
// keeps its lease, with a log line naming the partition, and on the
// dashboard's lanes panel (its snapshot), and the other
// lane leads with no reason; resumed, the reason goes.
func TestPausedLaneAndSlotsInStatus(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	cfg := load(t, "REDIS_URLS="+s.URL(), "PARTITIONS=2", "WORKER_ID=w1", "JOB_CONCURRENCY=3", "WORK_DURATION=1m")
	r := start(t, cfg)
	poll.Until(t, 10*time.Second, "both lanes lead", func() bool { return r.leads() == 2 })
	status := func() statusdoc.Status {
		t.Helper()
		_, body := get(t, cfg.Port, "/status")
		var st statusdoc.Status
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// A worker holds a slot for a moment while it claims: idle, none.
	poll.Until(t, 10*time.Second, "3 slots, none in use", func() bool { return status().JobSlots == statusdoc.JobSlots{Size: 3} })
	if _, err := r.d.be.Queues.EnqueueItem(t.Context(), jobs.Item{Key: "slow", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the job running in one slot", func() bool { return status().JobSlots == statusdoc.JobSlots{Size: 3, InUse: 1} })

	paused := 1 - r.d.be.Queues.Partition("slow", "")
	if err := r.d.operator.Pause(t.Context(), paused); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, fmt.Sprintf("lane %d saying paused", paused), func() bool {
		l := status().Lanes
		return len(l) == 2 && strings.HasPrefix(l[paused].Reason, "paused") && l[paused].Token > 0 && l[1-paused].Reason == ""
	})
	if r.leads() != 2 {
		t.Fatal("a paused lane gave its lease up")
	}
	poll.Until(t, 10*time.Second, "the page's lanes panel saying paused", func() bool {
		_, body := get(t, cfg.Port, "/api/snapshot")
		var page struct {
			Self struct {
				Lanes []statusdoc.LaneStatus `json:"lanes"`
			} `json:"self"`
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		l := page.Self.Lanes
		return len(l) == 2 && strings.HasPrefix(l[paused].Reason, "paused") && l[paused].Token > 0
	})
	var said []string
	for line := range strings.SplitSeq(r.logs.String(), "\n") {
		if strings.Contains(line, `msg="Leading, paused"`) {
			said = append(said, line)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], fmt.Sprintf(" partition=%d ", paused)) || !strings.Contains(said[0], "why=paused") {
		t.Fatalf("the pause's log lines: %q, want one naming partition %d", said, paused)
	}
	if err := r.d.operator.Resume(t.Context(), paused); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the reason gone once resumed", func() bool {
		l := status().Lanes
		return len(l) == 2 && l[paused].Reason == "" && l[paused].Token > 0
	})
}
