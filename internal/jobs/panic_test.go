package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// A handler that panics fails that attempt of its job: the stack is logged
// once per panic, the job is dead-lettered with the panic after
// MaxAttempts, the jobs after it are processed, and the loop never stops.
func TestPanickingHandlerIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	logs := &tail.Buffer{}
	q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
		if string(j.Payload) == "poison" {
			_ = j.Payload[len(j.Payload)] // a real runtime panic: index out of range
		}
		return e.store.write(ctx, j.ID, lease.Token())
	}), func(c *WorkerConfig) {
		c.MaxAttempts = 3
		c.OnFailure = FailureDeadLetter
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	a := e.enqueue(t, q, 1)
	if _, err := q.Enqueue(t.Context(), "", []byte("poison")); err != nil {
		t.Fatal(err)
	}
	b := e.enqueue(t, q, 1)
	_, done := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 2)
	poll.Until(t, 5*time.Second, "a dead letter", func() bool { return stats(t, q).DeadLettered == 1 })
	select {
	case err := <-done:
		t.Fatalf("Process returned %v after a handler panic", err)
	default:
	}
	dl, err := q.DeadLetters(t.Context(), 10)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
	if d := dl[0]; d.Attempts != 3 || !strings.Contains(d.Error, "jobs: handler panicked: runtime error: index out of range [6] with length 6") {
		t.Fatalf("dead letter %+v; want 3 attempts and the panic as its error", d)
	}
	if got := e.store.effects(t); len(got) != 2 || got[0].id != a[0] || got[1].id != b[0] {
		t.Fatalf("effects %v, want the jobs before and after the poison one", got)
	}
	out := logs.String()
	if n := strings.Count(out, `msg="handler panicked"`); n != 3 {
		t.Errorf("%d panics logged, want one per attempt (3):\n%s", n, out)
	}
	if n := strings.Count(out, " [running]:"); n != 3 {
		t.Errorf("%d stacks logged, want one per panic (3):\n%s", n, out)
	}
}

// Enqueue takes 1 byte to 1 MiB, whoever calls it.
func TestEnqueuePayloadBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error { return nil }), nil)
	for _, tc := range []struct {
		size int
		want error
	}{{0, ErrEmptyPayload}, {MaxPayload + 1, ErrPayloadTooLarge}, {1, nil}, {MaxPayload, nil}} {
		_, err := q.Enqueue(t.Context(), "", make([]byte, tc.size))
		if !errors.Is(err, tc.want) {
			t.Errorf("Enqueue of %d bytes: %v, want %v", tc.size, err, tc.want)
		}
	}
	if s := stats(t, q); s.Pending != 2 {
		t.Fatalf("%d jobs pending, want the 2 accepted", s.Pending)
	}
}
