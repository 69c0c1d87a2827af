package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// The fence is the highest token the store has seen (Kleppmann's rule): a
// token minted for an attempt that never wrote (a Redlock attempt that
// failed after the epoch authority granted it) fences no one, and the
// working leader carries on; once a higher token wrote, a lower one is
// rejected.
func TestFenceIsTheHighestTokenSeen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tq := e.queue(t, HandlerFunc(noop), nil)
	q := tq.Queue
	ctx := t.Context()
	e.enqueue(t, tq, 3)
	leader := becomeLeader(t, e.c)
	first, err := q.claimOne(ctx, leader)
	if err != nil || first == nil {
		t.Fatalf("claim: %v, %v", first, err)
	}
	unused := becomeLeader(t, e.c) // minted above the leader's token, never used
	if err := q.commitRun(ctx, leader, first); err != nil {
		t.Fatalf("the working leader's commit after an unused token %d: %v", unused, err)
	}
	second, err := q.claimOne(ctx, leader)
	if err != nil || second == nil {
		t.Fatalf("the working leader's next claim: %v, %v", second, err)
	}
	if f := e.c.Get(ctx, q.fence).Val(); f != "1" {
		t.Fatalf("fence %q, want the highest token written, 1", f)
	}

	next := becomeLeader(t, e.c)
	again, err := q.claimOne(ctx, next)
	if err != nil || again == nil || again.jobs[0].ID != second.jobs[0].ID {
		t.Fatalf("the next leader's claim: %v, %v", again, err)
	}
	if f := e.c.Get(ctx, q.fence).Val(); f != "3" {
		t.Fatalf("fence %q after token 3 wrote, want 3", f)
	}
	var se *StaleError
	if err := q.commitRun(ctx, leader, second); !errors.As(err, &se) || se.Token != leader || se.Epoch != next {
		t.Fatalf("commit with token %d after token %d wrote: %v, want ErrStaleToken", leader, next, err)
	}
	if err := q.commitRun(ctx, next, again); err != nil {
		t.Fatalf("the next leader's commit: %v", err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Committed != 2 {
		t.Fatalf("stats %+v, %v; want 2 committed", st, err)
	}

	// The fence is an integer or nothing works: no write goes unfenced.
	e.c.Set(ctx, q.fence, "garbage", 0)
	if _, err := q.claimOne(ctx, next); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("claim over a garbage fence: %v", err)
	}
}

// An operator's raise (lockworker epoch --raise-to N) fences the store at
// once, on the fence the lock names (one node: the epoch itself; Redlock:
// a key of its own): the working leader's next write is stale, and the
// next leadership's token is above N and writes.
func TestEpochRaiseFencesTheStore(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "single node", 3: "redlock"}[n], func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			nodes := []redis.Scripter{e.c}
			for range n - 1 {
				nodes = append(nodes, redistest.Start(t, redistest.Options{}).Client())
			}
			l, err := redislock.New(redislock.Config{Nodes: nodes, Keys: testKeys, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			q, err := New(Config{Client: e.c, Keys: testKeys, FenceKey: l.FenceKey()})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"a", "b"} {
				if _, err := q.Enqueue(ctx, "", []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			lease, err := l.Acquire(ctx, "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			first, err := q.claimOne(ctx, lease.Token())
			if err != nil || first == nil {
				t.Fatalf("claim: %v, %v", first, err)
			}
			if _, after, err := l.RaiseEpoch(ctx, 10); err != nil || after != 10 {
				t.Fatalf("raise: %d, %v", after, err)
			}
			if err := q.commitRun(ctx, lease.Token(), first); !errors.Is(err, ErrStaleToken) {
				t.Fatalf("commit with token %d after a raise to 10: %v, want ErrStaleToken", lease.Token(), err)
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
			next, err := l.Acquire(ctx, "b", 0)
			if err != nil || next.Token() != 11 {
				t.Fatalf("acquire after the raise: %v, %v; want token 11", next, err)
			}
			again, err := q.claimOne(ctx, next.Token())
			if err != nil || again == nil || again.jobs[0].ID != first.jobs[0].ID {
				t.Fatalf("claim after the raise: %v, %v", again, err)
			}
			if err := q.commitRun(ctx, next.Token(), again); err != nil {
				t.Fatal(err)
			}
		})
	}
}
