package redislock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/replicas"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// TestBumpWaitsForReplicas: with a replica that does not acknowledge (it
// is frozen, so the master still counts it online), the acquire fails
// with ErrReplicas and leaves no lock behind; once the replica answers,
// the next acquire succeeds with a higher token, which the replica
// already holds when Acquire returns.
func TestBumpWaitsForReplicas(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	r := redistest.StartReplica(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ad, rep := admin(t, s), admin(t, r)
	ctx := t.Context()

	// Under load a healthy replica can miss the WAIT bound too; that
	// attempt fails as it should, and a later one succeeds.
	var a *Lease
	var err error
	poll.Until(t, 10*time.Second, "an acquire with a healthy replica", func() bool {
		a, err = l.Acquire(ctx, "w", 0)
		return err == nil
	})
	if got := rep.Get(ctx, keys.Epoch()).Val(); got != strconv.FormatInt(a.Token(), 10) {
		t.Fatalf("replica epoch %q when Acquire returned token %d", got, a.Token())
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}

	r.Freeze()
	_, err = l.Acquire(ctx, "w", 0)
	r.Thaw()
	if !errors.Is(err, ErrReplicas) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with a silent replica: %v, want ErrReplicas", err)
	}
	if n := ad.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("%d lock keys left after the unreplicated attempt", n)
	}

	var b *Lease
	poll.Until(t, 10*time.Second, "an acquire once the replica answers", func() bool {
		b, err = l.Acquire(ctx, "w", 0)
		return err == nil
	})
	if b.Token() <= a.Token()+1 { // the failed attempt used a.Token()+1
		t.Fatalf("token %d after %d and a failed attempt", b.Token(), a.Token())
	}
	if got := rep.Get(ctx, keys.Epoch()).Val(); got != strconv.FormatInt(b.Token(), 10) {
		t.Fatalf("replica epoch %q when Acquire returned token %d", got, b.Token())
	}
}

// TestRedlockAuthorityWaitsForReplicas: the Redlock epoch bump on an
// authority whose replica does not acknowledge fails the acquire, and the
// quorum is released.
func TestRedlockAuthorityWaitsForReplicas(t *testing.T) {
	c := startCluster(t, 3)
	authority := redistest.Start(t, redistest.Options{})
	r := redistest.StartReplica(t, authority)
	l := newLocker(t, c.clients(t), func(cfg *Config) { cfg.Epoch = authority.Client() })
	ctx := t.Context()
	r.Freeze()
	_, err := l.Acquire(ctx, "w", 0)
	r.Thaw()
	if !errors.Is(err, ErrReplicas) {
		t.Fatalf("acquire with a silent replica of the authority: %v, want ErrReplicas", err)
	}
	for i, a := range c.admins {
		if a.Exists(ctx, key).Val() != 0 {
			t.Fatalf("node %d still holds the lock", i)
		}
	}
}

// TestNoReplicaNoWait: on a master without replicas nothing waits. Over
// many acquires the only extra command is INFO replication, at most once per
// replicas.TTL, sent in the same round trip as a bump.
func TestNoReplicaNoWait(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ad := admin(t, s)
	ctx := t.Context()
	start := time.Now()
	for range 50 {
		lease, err := l.Acquire(ctx, "w", 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	stats := ad.Info(ctx, "commandstats").Val()
	if strings.Contains(stats, "cmdstat_wait:") {
		t.Fatalf("WAIT sent to a master without replicas:\n%s", stats)
	}
	roles := calls(stats, "info")
	if limit := int(elapsed/replicas.TTL) + 1; roles < 1 || roles > limit {
		t.Fatalf("INFO sent %d times in %s, want 1 to %d", roles, elapsed, limit)
	}
}

// calls reads cmd's call count from INFO commandstats.
func calls(stats, cmd string) int {
	for line := range strings.SplitSeq(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestTokensAcrossSentinelFailover: a lock on a Sentinel group keeps its
// tokens increasing across a forced failover: the client follows the
// sentinels to the new master, whose epoch already holds every token
// handed out (each was WAITed for).
func TestTokensAcrossSentinelFailover(t *testing.T) {
	g := redistest.StartSentinelGroup(t, fleet.SentinelSpec{})
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: g.Master, SentinelAddrs: addrsOf(g.Sentinels),
		MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	testTokensAcrossFailover(t, c, func(ctx context.Context) error { _, err := g.Failover(ctx); return err })
}

// TestTokensAcrossClusterFailover: the same in a Redis Cluster, with
// CLUSTER FAILOVER on the replica of the lock's slot; the client answers
// MOVED from the old master by reloading its slot map, and a later
// attempt reaches the new one.
func TestTokensAcrossClusterFailover(t *testing.T) {
	cl := redistest.StartCluster(t, fleet.ClusterSpec{})
	c := redis.NewClusterClient(&redis.ClusterOptions{MaintNotificationsConfig: redisopt.NoMaintNotifications(),
		Addrs: addrsOf(cl.Nodes), MaxRedirects: -1, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	testTokensAcrossFailover(t, c, func(ctx context.Context) error {
		_, err := cl.Failover(ctx, key)
		return err
	})
}

// testTokensAcrossFailover takes and releases the lock a few times, fails
// the master over while the lock is held, and checks that the next
// leaderships get higher tokens than every one before.
func testTokensAcrossFailover(t *testing.T, c redis.Scripter, failover func(context.Context) error) {
	t.Helper()
	l, err := New(Config{Nodes: []redis.Scripter{c}, Keys: keys, TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	acquire := func() *Lease {
		var lease *Lease
		poll.Until(t, 20*time.Second, "an acquire", func() bool {
			lease, err = l.Acquire(ctx, "w", 0)
			return err == nil
		})
		return lease
	}
	var last int64
	for range 3 {
		lease := acquire()
		if lease.Token() <= last {
			t.Fatalf("token %d after %d", lease.Token(), last)
		}
		last = lease.Token()
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	held := acquire()
	last = held.Token()
	if err := failover(ctx); err != nil {
		t.Fatal(err)
	}
	// The lease outlives the failover or not (renews may meet MOVED or the
	// old master); either way the next leadership's token is higher.
	_ = l.Release(ctx, held)
	next := acquire()
	if next.Token() <= last {
		t.Fatalf("token %d after the failover, not above %d", next.Token(), last)
	}
	h, err := l.Holder(ctx)
	if err != nil || !h.Held || h.Epoch != next.Token() {
		t.Fatalf("holder after the failover: %+v, %v; want held at epoch %d", h, err, next.Token())
	}
}

func addrsOf(rs []*fleet.Redis) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Addr()
	}
	return out
}

// TestMinReplicas: with MinReplicas 1 a master without a replica hands
// out no token (as an old master does whose replica was just promoted);
// once a replica is online, the acquire succeeds. The error names the
// master and says it is short: 0 online replicas of the 1 asked for.
func TestMinReplicas(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	l := newLocker(t, []*redis.Client{s.Client()}, func(c *Config) { c.MinReplicas = 1 })
	ctx := t.Context()
	for range 3 { // the first reads the count with the bump, the next trust it
		_, err := l.Acquire(ctx, "w", 0)
		var re *ReplicasError
		if !errors.Is(err, ErrReplicas) || !errors.As(err, &re) || re.Master != s.Addr() || re.Online != 0 || re.Min != 1 || !re.Short() {
			t.Fatalf("acquire without a replica: %v (%+v), want a short ReplicasError for %s", err, re, s.Addr())
		}
	}
	if n := admin(t, s).Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the unreplicated attempt left its lock")
	}
	redistest.StartReplica(t, s)
	poll.Until(t, 10*time.Second, "an acquire once a replica is online", func() bool {
		_, err := l.Acquire(ctx, "w", 0)
		return err == nil
	})
}

// TestNewMasterWithoutScriptsOrReplicas: as after a failover whose old
// master is gone, the authority forgets its scripts and loses its only
// replica while the locker still counts one. The next attempts learn the
// new count from INFO replication and load the script: an acquire succeeds within a
// few tries instead of waiting for a replica that will never answer.
//
// At most the first attempt, which trusts the fresh count of one replica,
// may WAIT for it (and block WAIT's whole timeout). Every later attempt
// reads INFO replication before it sends a WAIT: a locker that kept WAITing for the
// replica that is gone used up most of each attempt's node timeout, and
// on a loaded machine failed every attempt.
func TestNewMasterWithoutScriptsOrReplicas(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	r := redistest.StartReplica(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	var a *Lease
	var err error
	poll.Until(t, 10*time.Second, "an acquire with a healthy replica", func() bool {
		a, err = l.Acquire(ctx, "w", 0)
		return err == nil
	})
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	poll.Until(t, 10*time.Second, "the master to see its replica gone", func() bool {
		n, err := replicas.Count(admin(t, s).Do(ctx, "INFO", "replication"))
		return err == nil && n == 0
	})
	ad := admin(t, s)
	if err := ad.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waits := func() int { return calls(ad.Info(ctx, "commandstats").Val(), "wait") }
	before := waits()
	for i := range 5 {
		if _, err = l.Acquire(ctx, "w", 0); err == nil {
			if n := waits() - before; n > 1 {
				t.Fatalf("%d WAITs for a replica that is gone, want at most 1 (the first attempt's)", n)
			}
			return
		}
		t.Logf("attempt %d: %v", i+1, err)
	}
	t.Fatalf("no acquire in 5 attempts on a master without scripts or replicas: %v", err)
}

// TestResyncingReplicaNotWaitedFor: a replica in its full resync (held in
// wait_bgsave by a diskless sync delay) cannot acknowledge, so an epoch
// bump does not WAIT for it: acquires succeed at once, and none sends a
// WAIT that could only time out.
func TestResyncingReplicaNotWaitedFor(t *testing.T) {
	s := redistest.Start(t, redistest.Options{Args: []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "60"}})
	redistest.Start(t, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Port)}})
	ad := admin(t, s)
	ctx := t.Context()
	poll.Until(t, 10*time.Second, "the replica in its full resync", func() bool {
		return strings.Contains(ad.Info(ctx, "replication").Val(), "state=wait_bgsave")
	})
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	for range 3 {
		lease, err := l.Acquire(ctx, "w", 0)
		if err != nil {
			t.Fatalf("acquire with a replica in its resync: %v", err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls(ad.Info(ctx, "commandstats").Val(), "wait"); n != 0 {
		t.Fatalf("%d WAITs for a replica that cannot acknowledge", n)
	}
}
