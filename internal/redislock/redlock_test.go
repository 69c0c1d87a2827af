package redislock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// cluster is N independent redis-servers, with an admin client each.
type cluster struct {
	servers []*redistest.Server
	admins  []*redis.Client
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{}
	for range n {
		s := redistest.Start(t, redistest.Options{})
		c.servers = append(c.servers, s)
		c.admins = append(c.admins, admin(t, s))
	}
	return c
}

func (c *cluster) clients(t *testing.T) []*redis.Client {
	var out []*redis.Client
	for _, s := range c.servers {
		out = append(out, s.Client())
	}
	return out
}

// token is the fencing token recorded in K's value on node i (0: none).
func (c *cluster) token(t *testing.T, i int) int64 {
	t.Helper()
	f := strings.SplitN(c.value(t, i), ":", 3)
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n
}

// value is K's value on node i ("" when missing).
func (c *cluster) value(t *testing.T, i int) string {
	t.Helper()
	v, err := c.admins[i].Get(t.Context(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	return v
}

// Every combination of 5 nodes being free or not, where a node that is not
// free is held by someone else or down:
// the lock is granted exactly when at least 3 are free, and a failed
// attempt leaves no key behind on any node.
func TestRedlockQuorumCombinations(t *testing.T) {
	c := startCluster(t, 5)
	// The epoch authority is a separate, persistent server: the lock nodes
	// are killed and restarted empty here, and an epoch on one of them
	// would start over.
	authority := redistest.Start(t, redistest.Options{AppendOnly: true})
	nodes, epoch := c.clients(t), authority.Client()
	l := newLocker(t, nodes, func(cfg *Config) {
		// A down node here is killed, so it refuses at once; the timeout
		// only bounds the live ones, and is what a loaded CI machine needs
		// for them to answer (50ms made this test fail on live nodes, the
		// authority's ROLE+EVALSHA round trip among them, at load 5+).
		cfg.NodeTimeout = 250 * time.Millisecond
		cfg.Epoch = epoch
	})
	ctx := t.Context()
	// Connected clients and loaded scripts: a first call's dial, handshake
	// and NOSCRIPT round trip would not fit in 50ms on a loaded machine.
	for _, n := range append(nodes, epoch) {
		if err := n.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		loadScripts(t, n)
	}
	var lastToken int64
	// Each mask says which nodes are not free. In the first round they are
	// all held by another holder; in the second, alternately held and down.
	for round := range 64 {
		mask := round % 32
		var free, occupied, down []int
		for i := range 5 {
			switch {
			case mask&(1<<i) == 0:
				free = append(free, i)
			case round < 32 || (i+mask)%2 == 0:
				occupied = append(occupied, i)
			default:
				down = append(down, i)
			}
		}
		t.Run(fmt.Sprintf("free%v_held%v_down%v", free, occupied, down), func(t *testing.T) {
			for _, i := range occupied {
				c.admins[i].Set(ctx, key, "foreign", 10*time.Second)
			}
			for _, i := range down {
				c.servers[i].Kill()
			}
			t.Cleanup(func() {
				for _, i := range down {
					c.servers[i].Restart()
				}
				for _, a := range c.admins {
					a.Del(ctx, key)
				}
			})
			lease, err := l.Acquire(ctx, "me", 0)
			if len(free) >= 3 {
				if err != nil {
					t.Fatalf("acquire with %d free nodes: %v", len(free), err)
				}
				if lease.Token() <= lastToken {
					t.Fatalf("token %d after %d", lease.Token(), lastToken)
				}
				lastToken = lease.Token()
				for _, i := range free {
					if !strings.HasPrefix(c.value(t, i), lease.value) {
						t.Fatalf("free node %d does not hold the lease", i)
					}
				}
				if err := l.Release(ctx, lease); err == nil && len(down) > 0 {
					t.Fatal("release reported no error with nodes down")
				}
			} else {
				if err == nil {
					t.Fatalf("acquired with only %d free nodes", len(free))
				}
				var held *HeldError
				switch {
				case len(occupied) >= 3:
					if !errors.As(err, &held) || held.TTL <= 0 || held.TTL > 10*time.Second {
						t.Fatalf("%d nodes held by another: %v, want a HeldError with its TTL", len(occupied), err)
					}
				default:
					var ne *NodeError
					if errors.Is(err, ErrNotAcquired) || !errors.As(err, &ne) {
						t.Fatalf("%d nodes down: %v, want node errors, not ErrNotAcquired", len(down), err)
					}
				}
			}
			for _, i := range free {
				if v := c.value(t, i); v != "" {
					t.Fatalf("free node %d left holding a key", i)
				}
			}
			for _, i := range occupied {
				if v := c.value(t, i); v != "foreign" {
					t.Fatalf("node %d held by another now holds %q", i, v)
				}
			}
		})
	}
}

// With 5 nodes a leader survives losing 2; losing a third makes renew fail
// (node errors: unreachable is not proof of loss) without moving the
// deadline, and once the deadline passes renew says ErrLost.
func TestRedlockRenewAcrossNodeLoss(t *testing.T) {
	c := startCluster(t, 5)
	var clk clock
	l := newLocker(t, c.clients(t), func(cfg *Config) { cfg.TTL = 5 * time.Second; cfg.Now = clk.Now })
	ctx := t.Context()
	lease, err := l.Acquire(ctx, "me", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.servers[0].Kill()
	c.servers[1].Kill()
	clk.Advance(time.Second)
	before := lease.Deadline()
	if err := l.Renew(ctx, lease); err != nil {
		t.Fatalf("renew with 3 of 5 nodes: %v", err)
	}
	if !lease.Deadline().After(before) {
		t.Fatal("renew did not move the deadline")
	}
	c.servers[2].Kill()
	clk.Advance(time.Second)
	before = lease.Deadline()
	err = l.Renew(ctx, lease)
	var ne *NodeError
	if err == nil || errors.Is(err, ErrLost) || !errors.As(err, &ne) {
		t.Fatalf("renew with 2 of 5 nodes: %v, want node errors and not ErrLost", err)
	}
	if !lease.Deadline().Equal(before) {
		t.Fatal("a failed renew moved the deadline")
	}
	clk.Advance(5 * time.Second)
	if err := l.Renew(ctx, lease); !errors.Is(err, ErrLost) {
		t.Fatalf("renew past the deadline: %v, want ErrLost", err)
	}
}

// Renew with a majority of nodes saying "not mine" is ErrLost, even though
// a minority still holds the key.
func TestRedlockRenewLostOnMajority(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	lease, err := l.Acquire(ctx, "me", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.admins[0].Del(ctx, key)
	if err := l.Renew(ctx, lease); err != nil {
		t.Fatalf("renew with 2 of 3 still ours: %v", err)
	}
	c.admins[1].Set(ctx, key, "foreign", 10*time.Second)
	if err := l.Renew(ctx, lease); !errors.Is(err, ErrLost) {
		t.Fatalf("renew with 2 of 3 not ours: %v, want ErrLost", err)
	}
	if c.value(t, 0) != "" || c.value(t, 1) != "foreign" {
		t.Fatal("renew re-created or overwrote a key")
	}
}

// Two nodes frozen: their per-node timeouts push the attempt past
// TTL - drift, so the quorum of the three others does not count. The
// attempt is released everywhere, without a notice: at once on the live
// nodes, and on the frozen ones as soon as they are thawed.
func TestRedlockSlowNodesOutlastValidity(t *testing.T) {
	c := startCluster(t, 5)
	var nodes []*redis.Client
	var notices []<-chan *redis.Message
	for i, s := range c.servers {
		nodes = append(nodes, warmClient(t, s.Addr()))
		loadScripts(t, c.admins[i])
		notices = append(notices, subscribe(t, c.admins[i]))
	}
	// validity = 2s - (0.45*2s + 2ms) = 1.098s < NodeTimeout 1.5s
	l := newLocker(t, nodes, func(cfg *Config) {
		cfg.TTL = 2 * time.Second
		cfg.DriftFactor = 0.45
		cfg.NodeTimeout = 1500 * time.Millisecond
	})
	c.servers[3].Freeze()
	c.servers[4].Freeze()
	_, err := l.Acquire(t.Context(), "me", 0)
	c.servers[3].Thaw()
	c.servers[4].Thaw()
	if err == nil || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire past the validity: %v, want a validity error", err)
	}
	for i := range 5 {
		// The frozen nodes run the acquire and then the release once thawed,
		// well before the key could expire (2s).
		poll.Until(t, time.Second, fmt.Sprintf("node %d ran the acquire and the release", i), func() bool {
			// The authority (node 0) acquires with a script, the others
			// with SET NX; all release with one.
			scripts, acquires := scriptCalls(t, c.admins[i]), commandCalls(t, c.admins[i], "set")
			if i == 0 {
				acquires = scripts - 1
			}
			return acquires >= 1 && scripts >= 1 && c.value(t, i) == ""
		})
		noNotice(t, c.admins[i], notices[i])
	}
}

// Tokens come from one epoch authority, so they increase across
// leaderships won on different quorums ({0,1,2}, then {2,3,4}).
func TestRedlockTokensAcrossQuorums(t *testing.T) {
	c := startCluster(t, 5)
	authority := redistest.Start(t, redistest.Options{AppendOnly: true})
	ea := admin(t, authority)
	ea.Set(t.Context(), keys.Epoch(), 41, 0) // history from earlier leaderships
	l := newLocker(t, c.clients(t), func(cfg *Config) { cfg.Epoch = authority.Client() })
	ctx := t.Context()

	c.admins[3].Set(ctx, key, "foreign", 10*time.Second)
	c.admins[4].Set(ctx, key, "foreign", 10*time.Second)
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Holder(ctx)
	if err != nil || !h.Held || h.WorkerID != "a" || h.Token != a.Token() || h.Epoch != a.Token() || h.TTL <= 0 {
		t.Fatalf("holder %+v, %v (lease token %d)", h, err, a.Token())
	}
	for i := range 3 {
		if tok := c.token(t, i); tok != a.Token() {
			t.Fatalf("node %d records token %d, want %d", i, tok, a.Token())
		}
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}

	c.admins[3].Del(ctx, key)
	c.admins[4].Del(ctx, key)
	c.admins[0].Set(ctx, key, "foreign", 10*time.Second)
	c.admins[1].Set(ctx, key, "foreign", 10*time.Second)
	b, err := l.Acquire(ctx, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Token() != 42 || b.Token() != 43 {
		t.Fatalf("tokens %d then %d, want 42 then 43", a.Token(), b.Token())
	}
	for i := range 5 {
		if c.admins[i].Exists(ctx, keys.Epoch()).Val() != 0 {
			t.Fatalf("node %d has an epoch counter: only the authority may", i)
		}
	}
}

// With the default epoch authority (node 0, also a lock node), the epoch
// bump records the token in node 0's holder hash in the same script; when
// node 0 did not grant, the token is written to the nodes that did. Either
// way Holder shows the lease's token.
func TestRedlockTokenRecordedForHolder(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	check := func(lease *Lease, recordedOn []int) {
		t.Helper()
		h, err := l.Holder(ctx)
		if err != nil || !h.Held || h.Token != lease.Token() || h.Epoch != lease.Token() {
			t.Fatalf("holder %+v, %v (lease token %d)", h, err, lease.Token())
		}
		for _, i := range recordedOn {
			if tok := c.token(t, i); tok != lease.Token() {
				t.Fatalf("node %d records token %d, want %d", i, tok, lease.Token())
			}
		}
	}
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	check(a, []int{0}) // the authority's script wrote it
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}

	c.admins[0].Set(ctx, key, "foreign", 10*time.Second)
	b, err := l.Acquire(ctx, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	check(b, []int{1, 2})
	if b.Token() != a.Token()+1 {
		t.Fatalf("tokens %d then %d", a.Token(), b.Token())
	}
}

// A failed attempt that grabbed only a minority (the one node where the
// leader's key had vanished) releases it without a notice: it never held
// the lock, and a notice would wake every follower into grabbing and
// releasing that node again, in a storm.
func TestMinorityCleanupPublishesNothing(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	if _, err := l.Acquire(ctx, "leader", 0); err != nil {
		t.Fatal(err)
	}
	c.admins[2].Del(ctx, key) // the leader keeps nodes 0 and 1
	notices := subscribe(t, c.admins[2])

	_, err := l.Acquire(ctx, "follower", 0)
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("follower's acquire: %v, want HeldError", err)
	}
	if v := c.value(t, 2); v != "" {
		t.Fatal("the follower's attempt left its key on node 2")
	}
	noNotice(t, c.admins[2], notices)
}

// With the epoch authority down, an attempt wins the quorum on the other
// two nodes and then fails at the epoch bump. Its clean-up must free both
// nodes without a notice: one would wake every follower into the same
// failing attempt, each waking the others again (a livelock of hundreds
// of attempts per second per replica).
func TestFailedBumpPublishesNothing(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	notices := []<-chan *redis.Message{subscribe(t, c.admins[1]), subscribe(t, c.admins[2])}
	c.servers[0].Kill()

	_, err := l.Acquire(t.Context(), "follower", 0)
	if err == nil || !strings.Contains(err.Error(), "epoch bump failed") {
		t.Fatalf("acquire with the epoch authority down: %v, want a failed bump", err)
	}
	for i := 1; i <= 2; i++ {
		if v := c.value(t, i); v != "" {
			t.Fatalf("node %d still holds the failed attempt's key", i)
		}
		noNotice(t, c.admins[i], notices[i-1])
	}
}

// scriptCalls is how many EVALSHA and EVAL calls the server has run.
func scriptCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	return commandCalls(t, c, "evalsha", "eval")
}

// commandCalls is how many calls of the given commands (lower case) the
// server has executed, those inside scripts included.
func commandCalls(t *testing.T, c *redis.Client, cmds ...string) int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range cmds {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				calls, _, _ := strings.Cut(rest, ",")
				v, _ := strconv.Atoi(calls)
				n += v
			}
		}
	}
	return n
}

// The epoch authority mints a token when it grants, before the quorum is
// known: an attempt that then fails has burned a token above the working
// leader's. The leader keeps its lease and its token (the job store fences
// on the highest token seen, see jobs' TestFenceIsTheHighestTokenSeen),
// the failed attempt leaves no key behind, and the next leadership's token
// is above the burned one.
func TestRedlockFailedAttemptBurnsAToken(t *testing.T) {
	c := startCluster(t, 3)
	l := newLocker(t, c.clients(t), nil)
	ctx := t.Context()
	leader, err := l.Acquire(ctx, "leader", 0)
	if err != nil || leader.Token() != 1 {
		t.Fatalf("acquire: %v, %v", leader, err)
	}
	c.admins[0].Del(ctx, key) // the leader's key lost on the authority only
	if _, err := l.Acquire(ctx, "contender", 0); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("contender: %v, want ErrNotAcquired", err)
	}
	if e, err := l.Epoch(ctx); err != nil || e != 2 {
		t.Fatalf("epoch %d, %v; want 2: the authority minted for the contender", e, err)
	}
	if v := c.value(t, 0); v != "" {
		t.Fatalf("the failed attempt left %q on the authority", v)
	}
	if err := l.Renew(ctx, leader); err != nil || leader.Token() != 1 {
		t.Fatalf("the leader's renew after the burned token: %v (token %d)", err, leader.Token())
	}
	if err := l.Release(ctx, leader); err != nil {
		t.Fatal(err)
	}
	next, err := l.Acquire(ctx, "next", 0)
	if err != nil || next.Token() != 3 {
		t.Fatalf("next leadership: %v, %v; want token 3", next, err)
	}
}

// One lock node with an epoch authority of its own (Config.Epoch): the
// node mints no token, so it is taken like a Redlock node that is not the
// authority, and the token comes from the bump on the authority.
func TestOneNodeWithSeparateAuthority(t *testing.T) {
	c := startCluster(t, 1)
	authority := redistest.Start(t, redistest.Options{})
	l := newLocker(t, c.clients(t), func(cfg *Config) { cfg.Epoch = authority.Client() })
	for want := int64(1); want <= 2; want++ {
		lease, err := l.Acquire(t.Context(), "me", 0)
		if err != nil {
			t.Fatalf("acquire %d: %v", want, err)
		}
		if lease.Token() != want {
			t.Fatalf("token %d, want %d from the authority's epoch", lease.Token(), want)
		}
		if v := c.value(t, 0); v == "" {
			t.Fatal("the lock node does not hold the key")
		}
		if err := l.Release(t.Context(), lease); err != nil {
			t.Fatal(err)
		}
	}
}
