package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A job that cannot start because the host is out of resources costs no
// attempt: with MaxAttempts 1, four such faults then a success commit it
// after one delivery, never dead-lettered; batch claims (Batch > 1) and
// redeliveries alike.
func TestHostFaultCostsNoAttempt(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 8} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			e := newEnv(t)
			var calls atomic.Int64
			q := e.queue(t, HandlerFunc(func(ctx context.Context, j Job, lease Lease) error {
				if calls.Add(1) <= 4 {
					return fmt.Errorf("guest: pipe2: %w", syscall.EMFILE)
				}
				return e.store.write(ctx, j.ID, lease.Token())
			}), func(c *WorkerConfig) { c.MaxAttempts, c.Batch = 1, batch })
			e.enqueue(t, q, 3)
			_, done := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
			waitCommitted(t, q, 3)
			if st := stats(t, q); st.DeadLettered != 0 {
				t.Fatalf("%d dead letters after host faults, want 0", st.DeadLettered)
			}
			select {
			case err := <-done:
				t.Fatalf("Process returned %v after fewer host faults than HostFaultLimit", err)
			default:
			}
		})
	}
}

// HostFaultLimit host faults in a row end Process with ErrHostFault (the
// leadership is given up), the job given back uncounted.
func TestHostFaultsEndTheLeadership(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue(t, HandlerFunc(func(context.Context, Job, Lease) error {
		return fmt.Errorf("fork/exec: %w", syscall.EAGAIN)
	}), func(c *WorkerConfig) { c.MaxAttempts, c.HostFaultLimit = 1, 3 })
	e.enqueue(t, q, 1)
	_, done := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	select {
	case err := <-done:
		if !errors.Is(err, ErrHostFault) {
			t.Fatalf("Process returned %v, want ErrHostFault", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Process still running after persistent host faults")
	}
	if st := stats(t, q); st.DeadLettered != 0 || st.Pending != 1 {
		t.Fatalf("after the host faults: %+v, want the job pending, none dead-lettered", st)
	}
}
