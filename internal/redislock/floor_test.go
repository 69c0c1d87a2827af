package redislock

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestFloorAfterFlush: a holder's token travels in the HeldError of
// another's attempt; after FLUSHALL (every node empties, the epoch with
// them) an acquire with that token as its floor gets a token above it,
// never equal, and says which epoch it found (below the floor: Redis lost
// it). With one node the authority mints in its acquire; with Redlock, on
// a quorum whose authority node is held by another value, the bump after
// the quorum raises too.
func TestFloorAfterFlush(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint("nodes=", n), func(t *testing.T) {
			c := startCluster(t, n)
			l := newLocker(t, c.clients(t), nil)
			ctx := t.Context()
			for range 3 { // the epoch at 3
				lease, err := l.Acquire(ctx, "x", 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(ctx, lease); err != nil {
					t.Fatal(err)
				}
			}
			a, err := l.Acquire(ctx, "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			if a.Token() != 4 || a.EpochSeen() != 3 {
				t.Fatalf("a: token %d, epoch seen %d; want 4 and 3", a.Token(), a.EpochSeen())
			}
			_, err = l.Acquire(ctx, "b", 0)
			var held *HeldError
			if !errors.As(err, &held) || held.Token != a.Token() {
				t.Fatalf("b while a holds: %v (token %v), want a HeldError with a's token %d", err, held, a.Token())
			}
			for _, ad := range c.admins {
				if err := ad.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if n > 1 { // the authority node held by another value: the quorum is won elsewhere, then bumped
				c.admins[0].Set(ctx, key, "foreign", 0)
			}
			b, err := l.Acquire(ctx, "b", held.Token)
			if err != nil {
				t.Fatal(err)
			}
			if b.Token() <= a.Token() {
				t.Fatalf("after FLUSHALL b got token %d, a still holds %d: a token handed out twice", b.Token(), a.Token())
			}
			if b.EpochSeen() != 0 {
				t.Fatalf("b found epoch %d after the flush, want 0", b.EpochSeen())
			}
			if e, err := l.Epoch(ctx); err != nil || e != b.Token() {
				t.Fatalf("epoch %d (%v), want b's token %d", e, err, b.Token())
			}
			_ = l.Release(ctx, b)
		})
	}
}

// TestFloorNeverLowers: a floor below the epoch changes nothing.
func TestFloorNeverLowers(t *testing.T) {
	c := startCluster(t, 1)
	l := newLocker(t, []*redis.Client{c.servers[0].Client()}, nil)
	ctx := t.Context()
	if err := c.admins[0].Set(ctx, keys.Epoch(), 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(ctx, "a", 5)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token() != 11 || lease.EpochSeen() != 10 {
		t.Fatalf("token %d, epoch seen %d; want 11 and 10", lease.Token(), lease.EpochSeen())
	}
	_ = l.Release(ctx, lease)
}
