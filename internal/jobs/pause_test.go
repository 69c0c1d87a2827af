package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// TestPauseResume: a paused queue hands the leader no new job, while the
// job in flight when Pause came finishes and is committed; Stats says
// paused; Resume wakes the idle leader at once (its poll is an hour) and
// the rest follows in order. Committed counts this worker's commits.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started, release := newSignal(), make(chan struct{})
	first := true
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if first {
			first = false
			started.fire()
			<-release // Pause comes while this one runs
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) { c.PollInterval = time.Hour })
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		notice.Watch(ctx, notice.Source{Subscribe: e.c.Subscribe}, map[string]func(){q.EnqueuedChannel(): q.Notify}, nil)
	}()
	t.Cleanup(func() { cancel(); <-watched })
	poll.Until(t, 5*time.Second, "the subscription", func() bool {
		return e.c.PubSubNumSub(t.Context(), q.EnqueuedChannel()).Val()[q.EnqueuedChannel()] == 1
	})

	ids := e.enqueue(t, q, 3)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	started.wait(t, "the first job")
	if err := q.Pause(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := scriptCalls(t, e.c)
	close(release)
	waitCommitted(t, q, 1)
	// The step that committed it found the flag: no job handed out.
	poll.Until(t, 5*time.Second, "the step that commits it", func() bool { return scriptCalls(t, e.c) >= calls+1 })
	s := stats(t, q)
	if !s.Paused || s.Committed != 1 || s.Pending != 2 || s.OldestPendingMs <= 0 || s.OldestPendingMs > time.Minute.Milliseconds() {
		t.Fatalf("paused queue stats = %+v", s)
	}
	if err := q.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, q, 3) // bounded at 20s, far below the hour's poll: the notice woke it
	if s := stats(t, q); s.Paused || s.OldestPendingMs != 0 {
		t.Fatalf("resumed, drained queue stats = %+v", s)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ef := range e.store.effects(t) {
		got = append(got, ef.id)
	}
	if len(got) != 3 || got[0] != ids[0] || got[2] != ids[2] {
		t.Fatalf("effects %v, want %v", got, ids)
	}
	if n := q.Committed(); n != 3 {
		t.Errorf("Committed() = %d, want 3", n)
	}
}
