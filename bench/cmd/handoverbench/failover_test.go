package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// fixedLease is a leadership that outlasts the test.
type fixedLease struct{}

func (fixedLease) Token() int64                        { return 1 }
func (fixedLease) Deadline() time.Time                 { return time.Now().Add(time.Hour) }
func (fixedLease) Valid() bool                         { return true }
func noop(context.Context, jobs.Job, jobs.Lease) error { return nil }

// TestWatchPromotionRefills runs watchPromotion against a master whose
// queue a failover emptied (no job pending) and one that kept a job: only
// the first gets a job enqueued, and both rounds end at the leader's next
// commit.
func TestWatchPromotionRefills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server: not in the unit tier (-short)")
	}
	for _, tc := range []struct {
		name    string
		pending int
		refill  bool
	}{
		{"lost the jobs", 0, true},
		{"kept a job", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			f := fleet.New(ctx)
			defer func() { _ = f.Close() }()
			r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "master"})
			if err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: r.Addr()})
			defer func() { _ = c.Close() }()
			const lockKey = "lw:test"
			q, err := jobs.New(jobs.Config{Client: c, Keys: keyspace.MustNew(lockKey).Lease()})
			if err != nil {
				t.Fatal(err)
			}
			for range tc.pending {
				if _, err := q.Enqueue(ctx, "", []byte("kept")); err != nil {
					t.Fatal(err)
				}
			}
			// The leader starts only once the watcher has read the
			// committed counter (its first Stats, one stats.lua call:
			// EVALSHA, or EVAL when the server lacked the script), as
			// the new master's leader starts after the promotion. The
			// test's own client shows cmd=client|list while it asks.
			watched := make(chan failoverSample, 1)
			go func() { watched <- watchPromotion(ctx, r.Addr(), lockKey, time.Now()) }()
			poll.Until(t, 10*time.Second, "the watcher's first Stats", func() bool {
				list, err := c.ClientList(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				return strings.Contains(list, " cmd=evalsha ") || strings.Contains(list, " cmd=eval ")
			})
			w, err := jobs.NewWorker(jobs.WorkerConfig{Queue: q, Handler: jobs.HandlerFunc(noop), Batch: 1, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			processed := make(chan error, 1)
			go func() { processed <- w.Process(wctx, fixedLease{}) }()
			s := <-watched
			stop()
			<-processed
			if s.commit == 0 || s.promoted == 0 {
				t.Fatalf("sample %+v: no commit seen after the promotion", s)
			}
			if s.refilled != tc.refill {
				t.Errorf("refilled %v, want %v", s.refilled, tc.refill)
			}
			st, err := q.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(max(tc.pending, 1)); st.Committed != want {
				t.Errorf("%d jobs committed, want %d (the refill adds one only to an empty queue)", st.Committed, want)
			}
		})
	}
}
