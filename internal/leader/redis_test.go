package leader

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/redisopt"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// These tests run real lanes over real redis-servers: what a fake cannot
// show (a frozen server, a quorum lost, the epoch flushed).

// recordingGroup remembers when the last renewal that succeeded started:
// the key on Redis lives at least until that moment + TTL.
type recordingGroup struct {
	*redislock.Group
	mu        sync.Mutex
	lastStart time.Time
}

func (g *recordingGroup) Renew(ctx context.Context, leases []*redislock.Lease) []error {
	start := time.Now()
	errs := g.Group.Renew(ctx, leases)
	if errs[0] == nil {
		g.mu.Lock()
		g.lastStart = start
		g.mu.Unlock()
	}
	return errs
}

func (g *recordingGroup) lastRenewal() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastStart
}

// realLane is a lane over a Locker on servers, its own Renewer, and a
// work that records each leadership's token and how its context ended.
type realLane struct {
	lane   *Lane
	locker *redislock.Locker
	group  *recordingGroup
	logs   *tail.Buffer
	tokens chan int64

	mu        sync.Mutex
	states    []machine.State
	ended     time.Time
	cause     error
	endedOnce chan struct{}
}

func clients(t *testing.T, servers ...*redistest.Server) []redis.Scripter {
	t.Helper()
	var nodes []redis.Scripter
	for _, s := range servers {
		c := redis.NewClient(&redis.Options{MaintNotificationsConfig: redisopt.NoMaintNotifications(), Addr: s.Addr(),
			MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	return nodes
}

func newRealLane(t *testing.T, id string, cfg redislock.Config, edit ...func(*Config)) *realLane {
	t.Helper()
	locker, err := redislock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	group, err := redislock.NewGroup([]*redislock.Locker{locker}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := &realLane{locker: locker, group: &recordingGroup{Group: group}, logs: &tail.Buffer{},
		tokens: make(chan int64, 16), endedOnce: make(chan struct{})}
	ren, err := NewRenewer(RenewerConfig{Group: r.group, Partitions: 1, Interval: cfg.TTL / 5})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	lc := Config{Lock: locker, Renewer: ren, WorkerID: id, RetryInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Work: func(ctx context.Context, lease Lease) error {
			r.tokens <- lease.Token()
			<-ctx.Done()
			once.Do(func() {
				r.mu.Lock()
				r.ended, r.cause = time.Now(), context.Cause(ctx)
				r.mu.Unlock()
				close(r.endedOnce)
			})
			return nil
		},
		Transitioned: func(_, to machine.State, _ machine.Trigger) {
			r.mu.Lock()
			r.states = append(r.states, to)
			r.mu.Unlock()
		},
	}
	for _, e := range edit {
		e(&lc)
	}
	if r.lane, err = New(lc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- ren.Run(ctx) }()
	lctx, stop := context.WithCancel(context.Background())
	go func() { done <- r.lane.Run(lctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		cancel()
		<-done
	})
	r.lane.Contend(true)
	return r
}

// count is how often the lane's chart entered st.
func (r *realLane) count(st machine.State) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.states {
		if s == st {
			n++
		}
	}
	return n
}

func receiveToken(t *testing.T, c <-chan int64, within time.Duration) int64 {
	t.Helper()
	select {
	case tok := <-c:
		return tok
	case <-time.After(within):
		t.Fatal("no leadership")
		return 0
	}
}

// checkStoppedInTime waits for the work to end and checks that it ended
// before the key's TTL on Redis could have run out.
func (r *realLane) checkStoppedInTime(t *testing.T, ttl time.Duration, leadStart time.Time) {
	t.Helper()
	select {
	case <-r.endedOnce:
	case <-time.After(3 * ttl):
		t.Fatal("work still running 3 TTLs after losing Redis")
	}
	keyEnd := r.group.lastRenewal()
	if keyEnd.Before(leadStart) {
		keyEnd = leadStart // no renewal yet: the acquire began after leadStart
	}
	keyEnd = keyEnd.Add(ttl)
	r.mu.Lock()
	ended, cause := r.ended, r.cause
	r.mu.Unlock()
	// Either the deadline timer fired (the work ended by itself, and the
	// lane gave the leadership up through cleanup), or renew gave up
	// first because the deadline was too close for another try and the
	// lane paused work.
	if !errors.Is(cause, ErrLeaseExpired) && !errors.Is(cause, errWorkStopped) {
		t.Errorf("work context cause %v, want the lease deadline or a stop", cause)
	}
	if !ended.Before(keyEnd) {
		t.Fatalf("work stopped %s after the key's TTL could have ended", ended.Sub(keyEnd))
	}
	t.Logf("work stopped %s before the key's TTL ended", keyEnd.Sub(ended).Round(time.Millisecond))
	if r.lane.Snapshot().Leads() {
		t.Fatal("the snapshot still says it leads after the deadline")
	}
	poll.Until(t, 5*time.Second, "pause_work or cleanup", func() bool {
		return r.count(machine.PauseWork)+r.count(machine.Cleanup) > 0
	})
}

// lockConfig is a lock over nodes with a drift margin wide enough that a
// timer firing late on a loaded machine still fires in time.
func lockConfig(name string, ttl time.Duration, nodes []redis.Scripter) redislock.Config {
	return redislock.Config{Nodes: nodes, Keys: keyspace.MustNew(name).Lease(), TTL: ttl,
		NodeTimeout: 100 * time.Millisecond, DriftFactor: 0.25}
}

// TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes: a lane leading over a
// real redis-server that is frozen (SIGSTOP) cancels its work, by the
// local deadline, before the key's TTL on Redis can have run out; then it
// pauses, and leads again with a higher token once Redis is back.
func TestWorkStopsBeforeTheKeyExpiresWhenRedisFreezes(t *testing.T) {
	const ttl = time.Second
	s := redistest.Start(t, redistest.Options{})
	t.Cleanup(s.Thaw)
	start := time.Now()
	r := newRealLane(t, "w", lockConfig("lw:leader-test", ttl, clients(t, s)))
	first := receiveToken(t, r.tokens, 5*time.Second)
	poll.Until(t, 5*time.Second, "two renewals", func() bool { return r.count(machine.RenewLock) >= 2 })

	s.Freeze()
	r.checkStoppedInTime(t, ttl, start)

	s.Thaw()
	second := receiveToken(t, r.tokens, 10*time.Second)
	if second <= first {
		t.Fatalf("token after the freeze %d, before %d: want it to increase", second, first)
	}
}

// TestRedlockLeaderAcrossNodeLoss: over 5 masters a lane that loses 2
// keeps leading through renewals; losing a third stops its work before the
// key's TTL can end and pauses it; when the nodes come back it leads again
// with a higher token.
func TestRedlockLeaderAcrossNodeLoss(t *testing.T) {
	const ttl = time.Second
	var servers []*redistest.Server
	for range 5 {
		s := redistest.Start(t, redistest.Options{})
		t.Cleanup(s.Thaw)
		servers = append(servers, s)
	}
	start := time.Now()
	r := newRealLane(t, "w", lockConfig("lw:leader-test", ttl, clients(t, servers...)))
	first := receiveToken(t, r.tokens, 5*time.Second)

	// Nodes 3 and 4 freeze (node 0 is the epoch authority and stays up).
	servers[3].Freeze()
	servers[4].Freeze()
	renews := r.count(machine.RenewLock)
	poll.Until(t, 5*time.Second, "three renewals with 2 of 5 nodes frozen", func() bool {
		return r.count(machine.RenewLock) >= renews+3
	})
	if n := r.count(machine.PauseWork); n != 0 {
		t.Fatalf("paused work %d time(s) with 3 of 5 nodes up", n)
	}
	if s := r.lane.Snapshot(); !s.Leads() || s.Token != first {
		t.Fatalf("with 3 of 5 nodes up: leads %v token %d, want token %d", s.Leads(), s.Token, first)
	}

	servers[2].Freeze()
	r.checkStoppedInTime(t, ttl, start)

	for _, s := range servers[2:] {
		s.Thaw()
	}
	second := receiveToken(t, r.tokens, 10*time.Second)
	if second <= first {
		t.Fatalf("token after the node loss %d, before %d: want it to increase", second, first)
	}
}

// regressions counts EpochRegression calls.
type regressions struct {
	nopObserver
	n atomic.Int64
}

func (r *regressions) EpochRegression() { r.n.Add(1) }

// TestObservedTokenAfterFlush: w2 leads with token N; w1, whose own
// highest token is below N, saw N in the lock's value while it waited.
// Redis is flushed (the lock, the epoch, everything) while w2 still
// works. w1 then leads with a token above N, never N itself, logs the
// loss at ERROR once and counts it.
func TestObservedTokenAfterFlush(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	cfg := lockConfig("lw:observed", 10*time.Second, clients(t, s))
	cfg.DriftFactor = 0
	w2 := newRealLane(t, "w2", cfg)
	n := receiveToken(t, w2.tokens, 5*time.Second)
	obs := &regressions{}
	w1 := newRealLane(t, "w1", cfg, func(c *Config) { c.Observer = obs })
	poll.Until(t, 5*time.Second, "w1 following w2", func() bool {
		s := w1.lane.Snapshot()
		return s.Reason.Kind == HeldElsewhere && s.Reason.Holder == "w2" && s.Observed == n
	})
	if err := s.Client().FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	got := receiveToken(t, w1.tokens, 5*time.Second)
	if got <= n {
		t.Fatalf("after FLUSHALL w1 got token %d while w2 works with %d: a token handed out twice", got, n)
	}
	logs := w1.logs.String()
	if obs.n.Load() != 1 || strings.Count(logs, "Redis lost its data") != 1 || !strings.Contains(logs, "level=ERROR") {
		t.Fatalf("%d regressions counted, logs:\n%s", obs.n.Load(), logs)
	}
}

// TestTokensNeverGoBackwards: after the epoch authority lost its data
// (tokens would start again at 1), a lane that held a higher token raises
// the epoch past it before using a token, and says so.
func TestTokensNeverGoBackwards(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := s.Client()
	keys := keyspace.MustNew("lw:backwards").Lease()
	if err := ad.Set(t.Context(), keys.Epoch(), 23, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := lockConfig("lw:backwards", 2*time.Second, clients(t, s))
	r := newRealLane(t, "w", cfg)
	if tok := receiveToken(t, r.tokens, 5*time.Second); tok != 24 {
		t.Fatalf("token %d, want 24", tok)
	}
	if err := ad.FlushAll(t.Context()).Err(); err != nil { // Redis restarted without its data
		t.Fatal(err)
	}
	if tok := receiveToken(t, r.tokens, 10*time.Second); tok != 25 {
		t.Fatalf("token after the data loss %d, want 25 (above the 24 held before)", tok)
	}
	if e := ad.Get(t.Context(), keys.Epoch()).Val(); e != "25" {
		t.Fatalf("epoch %q, want 25", e)
	}
	if !strings.Contains(r.logs.String(), "level=ERROR msg=\"Redis lost its data") ||
		!strings.Contains(r.logs.String(), "epochFound=0 highestObserved=24 token=25") {
		t.Fatalf("no warning:\n%s", r.logs)
	}
}

// TestStepDownHandsOver: a lane that steps down releases the lock with a
// notice, and the other lane, which heard it, leads at once with a fresh
// token, while the first holds off.
func TestStepDownHandsOver(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	cfg := lockConfig("lw:stepdown", 5*time.Second, clients(t, s))
	a := newRealLane(t, "a", cfg, func(c *Config) { c.RetryInterval = time.Minute })
	first := receiveToken(t, a.tokens, 5*time.Second)
	b := newRealLane(t, "b", cfg, func(c *Config) { c.RetryInterval = time.Minute })
	poll.Until(t, 5*time.Second, "b following a", func() bool { return b.lane.Snapshot().Reason.Kind == HeldElsewhere })
	ps := s.Client().Subscribe(t.Context(), cfg.Keys.ReleasedChannel())
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ps.Channel() {
			b.lane.NotifyReleased() // as the daemon's notice watcher does
		}
	}()
	a.lane.StepDown(first)
	second := receiveToken(t, b.tokens, 5*time.Second) // long before b's retry interval
	if second <= first {
		t.Fatalf("tokens %d then %d", first, second)
	}
	if s := a.lane.Snapshot(); s.Reason.Kind != SteppedDown || !s.Avoiding() {
		t.Fatalf("a after its step-down: %+v", s.Reason)
	}
}
