package redislock

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// groupOf builds n lockers on nodes, each its own LOCK_KEY lw:g<i>.
func groupOf(t *testing.T, nodes []*redis.Client, n int, oneScript bool) ([]*Locker, *Group) {
	t.Helper()
	var lockers []*Locker
	for i := range n {
		lockers = append(lockers, newLocker(t, nodes, func(c *Config) { c.Keys = keyspace.MustNew(fmt.Sprintf("lw:g%d", i)).Lease() }))
	}
	g, err := NewGroup(lockers, oneScript)
	if err != nil {
		t.Fatal(err)
	}
	return lockers, g
}

func TestGroupRenews(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nodes     int
		oneScript bool
	}{{"one node", 1, true}, {"one node, a script each", 1, false}, {"redlock", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*redis.Client
			var admins []*redis.Client
			for range tc.nodes {
				s := redistest.Start(t, redistest.Options{})
				nodes = append(nodes, s.Client())
				admins = append(admins, admin(t, s))
			}
			ctx := t.Context()
			lockers, g := groupOf(t, nodes, 4, tc.oneScript)
			leases := make([]*Lease, 4)
			for i := range 3 { // lease 3 stays nil: not held
				var err error
				if leases[i], err = lockers[i].Acquire(ctx, "w", 0); err != nil {
					t.Fatal(err)
				}
			}
			// Lease 1's key vanishes everywhere; lease 2's is taken over
			// by another value on every node.
			for _, a := range admins {
				a.Del(ctx, lockers[1].keys.Lock())
				a.Set(ctx, lockers[2].keys.Lock(), "other:9:x", time.Minute)
			}
			before := leases[0].Deadline()
			time.Sleep(5 * time.Millisecond)
			errs := g.Renew(ctx, leases)
			if errs[0] != nil || !leases[0].Deadline().After(before) {
				t.Fatalf("lease 0: %v, deadline %v -> %v; want renewed", errs[0], before, leases[0].Deadline())
			}
			for _, i := range []int{1, 2} {
				if !errors.Is(errs[i], ErrLost) {
					t.Errorf("lease %d: %v, want ErrLost", i, errs[i])
				}
			}
			if errs[3] != nil {
				t.Errorf("nil lease 3: %v", errs[3])
			}
			for _, a := range admins {
				if v := a.Get(ctx, lockers[2].keys.Lock()).Val(); v != "other:9:x" {
					t.Errorf("a foreign value was changed: %q", v)
				}
				if ttl := a.PTTL(ctx, lockers[0].keys.Lock()).Val(); ttl < time.Second {
					t.Errorf("lease 0's key has %s left, want about the 2s TTL", ttl)
				}
			}
		})
	}
}

// One round trip renews every lease: a script, an MGET and one PEXPIRE
// per lease.
func TestGroupRenewCost(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	ctx := t.Context()
	lockers, g := groupOf(t, []*redis.Client{s.Client()}, 16, true)
	leases := make([]*Lease, 16)
	for i := range leases {
		var err error
		if leases[i], err = lockers[i].Acquire(ctx, "w", 0); err != nil {
			t.Fatal(err)
		}
	}
	g.Renew(ctx, leases) // loads the script
	ad.ConfigResetStat(ctx)
	for _, err := range g.Renew(ctx, leases) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for cmd, want := range map[string]int{"evalsha": 1, "mget": 1, "pexpire": 16} {
		if got := calls(ad.Info(ctx, "commandstats").Val(), cmd); got != want {
			t.Errorf("%s: %d calls, want %d", cmd, got, want)
		}
	}
}

func TestGroupRefusesMixedLockers(t *testing.T) {
	a := redistest.Start(t, redistest.Options{})
	b := redistest.Start(t, redistest.Options{})
	la := newLocker(t, []*redis.Client{a.Client()}, nil)
	lb := newLocker(t, []*redis.Client{b.Client()}, nil)
	if _, err := NewGroup([]*Locker{la, lb}, true); err == nil {
		t.Fatal("lockers on different nodes made a group")
	}
}
