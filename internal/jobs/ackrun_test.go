package jobs

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestNoJobRunsBeforeItsReplicasAcknowledge: with REDIS_MIN_REPLICAS=1, a
// job written on a master whose replica cannot acknowledge (frozen: the
// master still counts it online) is not run, since a failover could still
// discard it and its idempotency key, and the client's retry of its 503
// would then run it twice (issue 35.3). The leader's steps claim it, WAIT
// falls short, and it is given back each time, no delivery counted; the
// leader stops, still unacknowledged, and the next one runs it once the
// replica is back: exactly once, as its first delivery.
func TestNoJobRunsBeforeItsReplicasAcknowledge(t *testing.T) {
	e := newEnv(t)
	r := redistest.StartReplica(t, e.srv)
	acknowledging(t, e.c)
	var ran atomic.Int32
	var attempt atomic.Int64
	h := HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		ran.Add(1)
		attempt.Store(int64(j.Attempt))
		return nil
	})
	qc := Config{Client: e.c, Keys: testKeys, MinReplicas: 1, ReplicaTimeout: 50 * time.Millisecond}
	q1 := e.queueOf(t, qc, h, nil)

	r.Freeze()
	t.Cleanup(r.Thaw)
	id, err := q1.Enqueue(t.Context(), "", []byte("charge 10"))
	if !errors.Is(err, ErrNotReplicated) || id != "" {
		t.Fatalf("enqueue with the replica frozen: %q, %v; want ErrNotReplicated", id, err)
	}
	before := waitCalls(t, e.c)
	stop, _ := process(t, q1, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 20*time.Second, "three steps whose WAIT fell short", func() bool {
		if n := ran.Load(); n > 0 {
			t.Fatalf("the job ran %d times before its replica acknowledged it", n)
		}
		return waitCalls(t, e.c)-before >= 3
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n > 0 {
		t.Fatalf("the job ran %d times before its replica acknowledged it", n)
	}

	r.Thaw()
	q2 := e.queueOf(t, qc, h, nil)
	process(t, q2, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q2, 1)
	if n, a := ran.Load(), attempt.Load(); n != 1 || a != 1 {
		t.Fatalf("once acknowledged the job ran %d times (last as attempt %d), want once, as attempt 1", n, a)
	}
	if s := stats(t, q2); s.Pending != 0 {
		t.Fatalf("%d jobs still pending after the commit", s.Pending)
	}
}

// TestUnacknowledgedClaimsCostNoAttempt: a job that failed once is
// claimed again, counted as its second delivery, while its replica cannot
// acknowledge; each such claim is given back uncounted, so once the
// replica is back the job runs as its second delivery, however many
// claims fell short (MaxAttempts is 3: counting them would fail it for
// good).
func TestUnacknowledgedClaimsCostNoAttempt(t *testing.T) {
	e := newEnv(t)
	r := redistest.StartReplica(t, e.srv)
	acknowledging(t, e.c)
	t.Cleanup(r.Thaw)
	var calls atomic.Int32
	var attempt atomic.Int64
	h := HandlerFunc(func(_ context.Context, j Job, _ Lease) error {
		calls.Add(1)
		attempt.Store(int64(j.Attempt))
		if j.Attempt == 1 {
			r.Freeze()
			return errors.New("fails once")
		}
		return nil
	})
	q := e.queueOf(t, Config{Client: e.c, Keys: testKeys, MinReplicas: 1, ReplicaTimeout: 50 * time.Millisecond}, h, nil)
	if _, err := q.Enqueue(t.Context(), "", []byte("charge 10")); err != nil {
		t.Fatal(err)
	}
	process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 20*time.Second, "the first delivery", func() bool { return calls.Load() > 0 })
	before := waitCalls(t, e.c)
	poll.Until(t, 20*time.Second, "six steps whose WAIT fell short", func() bool {
		if n := calls.Load(); n > 1 {
			t.Fatalf("the job ran again (attempt %d) before its replica acknowledged the claim", attempt.Load())
		}
		return waitCalls(t, e.c)-before >= 6
	})
	r.Thaw()
	waitCommitted(t, q, 1)
	if n, a := calls.Load(), attempt.Load(); n != 2 || a != 2 {
		t.Fatalf("the job ran %d times, last as attempt %d; want twice, the second as attempt 2", n, a)
	}
}

// BenchmarkProcessNoopBatchedAcked is BenchmarkProcessNoopBatched on a
// master with one replica (loopback) and REDIS_MIN_REPLICAS=1: every
// step that claims carries a WAIT; min=0 is the same master and replica
// without it.
func BenchmarkProcessNoopBatchedAcked(b *testing.B) {
	e := newEnv(b)
	redistest.StartReplica(b, e.srv)
	acknowledging(b, e.c)
	for _, min := range []int{0, 1} {
		b.Run("min="+strconv.Itoa(min), func(b *testing.B) {
			if err := e.c.FlushAll(b.Context()).Err(); err != nil {
				b.Fatal(err)
			}
			benchJobsOn(b, e, Config{Client: e.c, Keys: testKeys, MinReplicas: min}, HandlerFunc(noop), DefaultBatch)
		})
	}
}
