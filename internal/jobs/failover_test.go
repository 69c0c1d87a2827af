package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestNoAcknowledgedEnqueueLostToSentinelFailover: on a Sentinel group
// (a master, a replica, three sentinels) under the Sentinel default
// REDIS_MIN_REPLICAS=1, each round enqueues (one job, or a bulk of 20),
// and the moment the enqueue is acknowledged forces SENTINEL FAILOVER;
// every job acknowledged so far must be on the promoted master. Four
// rounds in a row, so each node is promoted twice (one always after a
// single enqueue, the other after a bulk one). An enqueue
// that is not acknowledged (the new master has no replica yet, or the old
// one is being demoted) is retried; it may stay behind as a duplicate,
// which at-least-once allows, but it is not counted as acknowledged.
func TestNoAcknowledgedEnqueueLostToSentinelFailover(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinelGroup(t, fleet.SentinelSpec{})
	ctx := t.Context()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: g.Master, SentinelAddrs: addrs(g.Sentinels),
		MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	q, err := New(Config{Client: c, Keys: keyspace.MustNew("failover").Lease(), MinReplicas: 1, ReplicaTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sentinel := client(t, g.Sentinels[0].Addr())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sentinel log:\n%s", g.Sentinels[0].Log())
		}
	})

	var acked []string
	for round := range 4 {
		if err := g.WaitStable(ctx); err != nil { // the demoted master is a replica again: a failover has a replica to promote
			t.Fatal(err)
		}
		old, err := g.MasterAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		poll.Until(t, 30*time.Second, fmt.Sprint("an acknowledged enqueue in round ", round), func() bool {
			if round%2 == 0 {
				id, err := q.Enqueue(ctx, "", []byte(fmt.Sprint("one ", round)))
				ids = []string{id}
				return err == nil
			}
			items := make([]Item, 20)
			for i := range items {
				items[i] = Item{Payload: fmt.Appendf(nil, "bulk %d/%d", round, i)}
			}
			ids, err = q.EnqueueMany(ctx, items)
			return err == nil
		})
		// At once: no WaitStable, no probe between the acknowledgement and
		// the failover.
		failover := func() bool { return sentinel.Do(ctx, "SENTINEL", "FAILOVER", g.Master).Err() == nil }
		poll.Until(t, 30*time.Second, "SENTINEL FAILOVER accepted", failover)
		acked = append(acked, ids...)
		// A loaded machine once saw an accepted failover not switch the
		// master within 30s; the command is sent again every 15s (INPROG
		// while the first one still runs, so at most one failover).
		var now string
		sent := time.Now()
		poll.Until(t, 90*time.Second, "a new master", func() bool {
			now, err = g.MasterAddr(ctx)
			if err == nil && now != old {
				role, err := client(t, now).Do(ctx, "ROLE").Slice()
				return err == nil && len(role) > 0 && role[0] == "master"
			}
			if time.Since(sent) > 15*time.Second {
				t.Logf("round %d: no new master 15s after SENTINEL FAILOVER: sent again (accepted: %v)", round, failover())
				sent = time.Now()
			}
			return false
		})
		have := map[string]bool{}
		onNew, err := New(Config{Client: client(t, now), Keys: q.cfg.Keys})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := onNew.Unfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			have[e.ID] = true
		}
		for _, id := range acked {
			if !have[id] {
				t.Fatalf("round %d: job %s was acknowledged but is not on the new master %s (it has %d entries)", round, id, now, len(entries))
			}
		}
		t.Logf("round %d: %d acknowledged jobs, all on the new master %s (was %s)", round, len(acked), now, old)
	}
}

func addrs(rs []*fleet.Redis) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Addr()
	}
	return out
}

// client is a plain client of the node at addr, closed at test end.
func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaintNotificationsConfig: redisopt.NoMaintNotifications()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
