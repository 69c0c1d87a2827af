package redislock

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// RaiseEpoch raises to at least N, never lowers, and every token handed
// out afterwards is above N.
func TestRaiseEpoch(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	lease, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct{ n, before, after int64 }{{10, 1, 10}, {5, 10, 10}, {10, 10, 10}, {0, 10, 10}}
	for _, st := range steps {
		before, after, err := l.RaiseEpoch(ctx, st.n)
		if err != nil || before != st.before || after != st.after {
			t.Fatalf("RaiseEpoch(%d) = %d, %d, %v; want %d, %d", st.n, before, after, err, st.before, st.after)
		}
	}
	if e, err := l.Epoch(ctx); err != nil || e != 10 {
		t.Fatalf("Epoch = %d, %v; want 10", e, err)
	}
	if l.FenceKey() != keys.Epoch() {
		t.Fatalf("single node fences on %s, want the epoch", l.FenceKey())
	}
	if _, _, err := l.RaiseEpoch(ctx, -1); err == nil {
		t.Fatal("RaiseEpoch(-1) succeeded")
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	next, err := l.Acquire(ctx, "b", 0)
	if err != nil || next.Token() != 11 {
		t.Fatalf("acquire after the raise: token %v, %v; want 11", next, err)
	}

	ad.Set(ctx, keys.Epoch(), "garbage", 0)
	if _, _, err := l.RaiseEpoch(ctx, 20); err == nil {
		t.Fatal("RaiseEpoch over a non-integer epoch succeeded")
	}
	if v := ad.Get(ctx, keys.Epoch()).Val(); v != "garbage" {
		t.Fatalf("a failed raise changed the epoch key to %q", v)
	}
}

// With Redlock the job store's fence is a key of its own, which a raise
// lifts to the epoch, also when a raise below the epoch leaves the epoch
// where it is.
func TestRaiseEpochRaisesTheRedlockFence(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	if l.FenceKey() != keys.Fence() {
		t.Fatalf("Redlock fences on %s, want %s", l.FenceKey(), keys.Fence())
	}
	if _, err := l.Acquire(ctx, "a", 0); err != nil {
		t.Fatal(err)
	}
	ad := c.admins[0]
	if n := ad.Exists(ctx, keys.Fence()).Val(); n != 0 {
		t.Fatal("the authority's grant moved the fence: a failed attempt would fence the leader")
	}
	if _, after, err := l.RaiseEpoch(ctx, 10); err != nil || after != 10 || ad.Get(ctx, keys.Fence()).Val() != "10" {
		t.Fatalf("raise to 10: epoch %d, fence %s, %v; want both 10", after, ad.Get(ctx, keys.Fence()).Val(), err)
	}
	ad.Set(ctx, keys.Fence(), 3, 0)
	if _, after, err := l.RaiseEpoch(ctx, 5); err != nil || after != 10 || ad.Get(ctx, keys.Fence()).Val() != "10" {
		t.Fatalf("raise to 5 over epoch 10, fence 3: epoch %d, fence %s, %v; want both 10", after, ad.Get(ctx, keys.Fence()).Val(), err)
	}
}

// With Redlock, a bump re-sent for the last leadership after a raise
// (its reply had been lost) bumps afresh: it must not hand out N itself.
// The authority (node 0) is held by another value, so the token comes
// from the bump after the quorum.
func TestRaiseForgetsTheLastBump(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	c.admins[0].Set(ctx, key, "foreign", 0)
	lease, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tok, _, _, err := l.bumpEpoch(ctx, lease.value, 0); err != nil || tok != lease.Token() {
		t.Fatalf("re-sent bump before the raise: %d, %v; want the same token %d", tok, err, lease.Token())
	}
	if _, _, err := l.RaiseEpoch(ctx, 50); err != nil {
		t.Fatal(err)
	}
	if tok, _, _, err := l.bumpEpoch(ctx, lease.value, 0); err != nil || tok != 51 {
		t.Fatalf("re-sent bump after raising to 50: %d, %v; want 51", tok, err)
	}
}

// Reissue gives a held lease a token above the floor, records it for
// Holder, and later acquisitions keep counting from there.
func TestReissue(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "single node", 3: "redlock"}[n], func(t *testing.T) {
			c := startCluster(t, n)
			l := newLocker(t, c.clients(t), nil)
			ctx := t.Context()
			lease, err := l.Acquire(ctx, "a", 0)
			if err != nil || lease.Token() != 1 {
				t.Fatalf("acquire: %v, %v", lease, err)
			}
			again, err := l.Reissue(ctx, lease, 24)
			if err != nil || again.Token() != 25 || !again.Valid() || !again.Deadline().Equal(lease.Deadline()) {
				t.Fatalf("Reissue above 24: %v, %v; want token 25 with the same deadline", again, err)
			}
			if h, err := l.Holder(ctx); err != nil || h.Token != 25 || h.Epoch != 25 || h.WorkerID != "a" {
				t.Fatalf("holder after the reissue: %+v, %v", h, err)
			}
			// A floor below the epoch still gives a new, higher token.
			if again, err = l.Reissue(ctx, again, 3); err != nil || again.Token() != 26 {
				t.Fatalf("Reissue above 3: %v, %v; want 26", again, err)
			}
			if err := l.Renew(ctx, again); err != nil {
				t.Fatalf("renew the reissued lease: %v", err)
			}
			if err := l.Release(ctx, again); err != nil {
				t.Fatal(err)
			}
			next, err := l.Acquire(ctx, "b", 0)
			if err != nil || next.Token() != 27 {
				t.Fatalf("acquire after the reissue: %v, %v; want token 27", next, err)
			}
			if _, err := l.Reissue(ctx, nil, 1); err == nil {
				t.Fatal("Reissue of a nil lease succeeded")
			}
		})
	}
}
