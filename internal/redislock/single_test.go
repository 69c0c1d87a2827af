package redislock

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// keys names the test lock's keys; key is its lock key.
var (
	keys = keyspace.MustNew("lw:test").Lease()
	key  = keys.Lock()
)

func TestSecondAcquireIsHeld(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, "b", 0)
	var held *HeldError
	if !errors.Is(err, ErrNotAcquired) || !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, want a HeldError wrapping ErrNotAcquired", err)
	}
	if held.TTL <= time.Second || held.TTL > 2*time.Second {
		t.Fatalf("held TTL %s, want about the 2s lease", held.TTL)
	}
	if a.Token() != 1 || !a.Valid() {
		t.Fatalf("first lease: token %d, valid %v", a.Token(), a.Valid())
	}
	h, err := l.Holder(ctx)
	if err != nil || !h.Held || h.WorkerID != "a" || h.Token != 1 || h.Epoch != 1 || h.TTL <= time.Second {
		t.Fatalf("holder %+v, %v", h, err)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Holder(ctx); err != nil || h.Held || h.Epoch != 1 {
		t.Fatalf("holder after release %+v, %v", h, err)
	}
}

func TestForgedLeaseLeavesHolderUntouched(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, func(c *Config) { c.TTL = 10 * time.Second })
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Let the TTL run down a little, so a wrongful refresh would show.
	poll.Until(t, 2*time.Second, "TTL to drop", func() bool { return ad.PTTL(ctx, key).Val() < 9900*time.Millisecond })
	before := ad.PTTL(ctx, key).Val()
	forged := &Lease{value: "not-" + a.value, workerID: "b", token: a.Token(), now: time.Now, deadline: time.Now().Add(time.Minute)}
	if err := l.Renew(ctx, forged); !errors.Is(err, ErrLost) {
		t.Fatalf("renew of a forged lease: %v, want ErrLost", err)
	}
	if err := l.Release(ctx, forged); err != nil {
		t.Fatalf("release of a forged lease: %v (not mine is fine)", err)
	}
	if got := ad.Get(ctx, key).Val(); got != a.value+"1:a" {
		t.Fatal("the holder's value changed")
	}
	if after := ad.PTTL(ctx, key).Val(); after > before {
		t.Fatalf("the holder's TTL went from %s up to %s", before, after)
	}
	// A forged prefix that the real value merely starts with does not match
	// either: the prefix ends with the ':' the secret cannot contain.
	short := &Lease{value: a.value[:10], workerID: "b", token: a.Token(), now: time.Now, deadline: time.Now().Add(time.Minute)}
	if err := l.Renew(ctx, short); !errors.Is(err, ErrLost) {
		t.Fatalf("renew with a part of the secret: %v, want ErrLost", err)
	}
}

func TestKeyExpiresAfterTTL(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, func(c *Config) { c.TTL = 300 * time.Millisecond; c.NodeTimeout = 0 })
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(a.Deadline()); d <= 0 || d > 300*time.Millisecond {
		t.Fatalf("deadline in %s, want within the 300ms TTL", d)
	}
	poll.Until(t, 2*time.Second, "the key to expire", func() bool { return ad.Exists(ctx, key).Val() == 0 })
	if a.Valid() {
		t.Fatal("lease valid after its key expired")
	}
	b, err := l.Acquire(ctx, "b", 0)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	if b.Token() <= a.Token() {
		t.Fatalf("token %d after %d", b.Token(), a.Token())
	}
}

func TestTokensIncreaseAndValuesAreRandom(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	seen := map[string]bool{}
	var last int64
	for i := range 100 {
		lease, err := l.Acquire(ctx, "w", 0)
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if lease.Token() <= last {
			t.Fatalf("token %d after %d", lease.Token(), last)
		}
		last = lease.Token()
		// rand.Text: base32, 5 bits a character, then the ':' the prefix ends with.
		secret, ok := strings.CutSuffix(lease.value, ":")
		if bits := 5 * len(secret); !ok || bits < 128 || strings.Trim(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("lock value of %d bits or not base32", bits)
		}
		if seen[lease.value] || strings.Contains(lease.value, "w") {
			t.Fatal("lock value repeated or derived from the worker ID")
		}
		seen[lease.value] = true
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
}

// A re-sent acquire (go-redis re-sends a command whose reply was lost)
// must count as the same acquisition: same token, one epoch bump.
func TestAcquireScriptIsIdempotent(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c, ad := s.Client(), admin(t, s)
	ctx := t.Context()
	run := func(value string) []int64 {
		v, err := acquireScript.Run(ctx, c, []string{key, keys.Epoch()}, value+":", 5000, "w", flag(true)).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first, again := run("value-1"), run("value-1")
	if first[0] != 1 || again[0] != 1 || first[1] != 1 || again[1] != 1 {
		t.Fatalf("first %v, re-sent %v: want both {1, 1}", first, again)
	}
	if e := ad.Get(ctx, keys.Epoch()).Val(); e != "1" {
		t.Fatalf("epoch %s after a re-sent acquire, want 1", e)
	}
	if got := ad.Get(ctx, key).Val(); got != "value-1:1:w" {
		t.Fatalf("lock value %q, want the prefix, the token and the worker", got)
	}
	// The key expired (or was released) between the send and the re-send
	// (which retries off prevent): it is taken again with a fresh token,
	// never an older one; the first is burned, which the store's fence
	// (highest token seen) makes harmless.
	ad.Del(ctx, key)
	if v := run("value-1"); v[0] != 1 || v[1] != 2 {
		t.Fatalf("re-sent after expiry: %v, want {1, 2}", v)
	}
	if v := run("value-2"); v[0] != 0 || v[1] <= 0 {
		t.Fatalf("another value while held: %v, want {0, pttl}", v)
	}
	ad.Del(ctx, key)
	if v := run("value-2"); v[0] != 1 || v[1] != 3 {
		t.Fatalf("next value: %v, want token 3", v)
	}
	// The Redlock epoch bump is idempotent per value while no token was
	// minted since, and records the token when K holds the value.
	ek := []string{keys.Epoch(), keys.EpochLast(), key, keys.Fence()}
	bump := func(v string) []int64 {
		r, err := epochScript.Run(ctx, c, ek, v+":").Int64Slice()
		if err != nil || len(r) != 3 {
			t.Fatalf("epoch bump: %v %v", r, err)
		}
		return r
	}
	t1, t2, t3 := bump("value-3"), bump("value-3"), bump("value-4")
	if t1[0] != 4 || t2[0] != 4 || t3[0] != 5 || t1[1] != 0 {
		t.Fatalf("epoch bumps %v, %v, %v: want 4, 4, 5, none recorded", t1, t2, t3)
	}
	ad.Del(ctx, key)
	run("value-4") // a mint (6) in between makes value-3's tag stale
	if r := bump("value-3"); r[0] != 7 {
		t.Fatalf("bump after a mint: %v, want a fresh token 7", r)
	}
	if r := bump("value-4"); r[0] != 8 || r[1] != 1 || ad.Get(ctx, key).Val() != "value-4:8:w" {
		t.Fatalf("bump of the holder: %v, value %q; want 8 recorded", r, ad.Get(ctx, key).Val())
	}
	// A mint in the acquire leaves the Redlock fence alone (the attempt may
	// fail); a bump after the quorum raises it.
	if f := ad.Get(ctx, keys.Fence()).Val(); f != "8" {
		t.Fatalf("fence %q after the bumps, want 8", f)
	}
	ad.Del(ctx, key)
	if v := run("value-6"); v[1] != 9 || ad.Get(ctx, keys.Fence()).Val() != "8" {
		t.Fatalf("mint %v moved the fence to %s", v, ad.Get(ctx, keys.Fence()).Val())
	}
}

// A frozen server takes the acquire script into its socket buffer and
// answers nothing: Acquire times out, must treat the attempt as maybe held
// and release it. Once thawed, the server runs the acquire and then the
// release, so the key ends up free (well before its TTL), and no release
// notice wakes the followers for an attempt that failed.
func TestTimedOutAcquireIsReleased(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	notices := subscribe(t, ad)
	l := newLocker(t, []*redis.Client{warmClient(t, s.Addr())}, func(c *Config) {
		c.TTL = 20 * time.Second
		c.NodeTimeout = 200 * time.Millisecond
	})
	loadScripts(t, ad) // so EVALSHA finds them; a NOSCRIPT reply would make the test vacuous
	s.Freeze()
	_, err := l.Acquire(t.Context(), "w", 0)
	s.Thaw()
	var held *HeldError
	var ne *NodeError
	if err == nil || errors.As(err, &held) || !errors.As(err, &ne) || !isTimeout(err) {
		t.Fatalf("acquire on a frozen server: %v, want a NodeError timeout", err)
	}
	poll.Until(t, 5*time.Second, "the maybe-held attempt released", func() bool {
		return ad.Exists(t.Context(), key).Val() == 0
	})
	noNotice(t, ad, notices)
}

// The server applies the acquire but its reply is lost on the way back:
// Acquire times out, and its clean-up release (also applied, reply also
// lost) removes the key it did not know it held, without a notice.
func TestLostReplyAcquireIsReleased(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	notices := subscribe(t, ad)
	p := startProxy(t, s.Addr())
	l := newLocker(t, []*redis.Client{warmClient(t, p.Addr())}, func(c *Config) {
		c.TTL = 20 * time.Second
		c.NodeTimeout = 200 * time.Millisecond
	})
	loadScripts(t, ad) // so EVALSHA finds them; a NOSCRIPT reply would make the test vacuous
	p.drop.Store(true)
	_, err := l.Acquire(t.Context(), "w", 0)
	if !isTimeout(err) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire with lost replies: %v, want a timeout", err)
	}
	poll.Until(t, 5*time.Second, "the lost-reply attempt released", func() bool {
		return ad.Exists(t.Context(), key).Val() == 0
	})
	if e := ad.Get(t.Context(), keys.Epoch()).Val(); e != "1" {
		t.Fatalf("epoch %q: the lost acquire should have bumped it once", e)
	}
	noNotice(t, ad, notices)
}

func TestRenewAfterDeadlineIsLost(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	var clk clock
	l := newLocker(t, []*redis.Client{s.Client()}, func(c *Config) { c.TTL = 10 * time.Second; c.Now = clk.Now })
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 2*time.Second, "TTL to drop", func() bool { return ad.PTTL(ctx, key).Val() < 9900*time.Millisecond })
	before, deadline := ad.PTTL(ctx, key).Val(), a.Deadline()
	clk.Advance(10 * time.Second) // a pause longer than the lease
	if a.Valid() {
		t.Fatal("lease valid past its deadline")
	}
	if err := l.Renew(ctx, a); !errors.Is(err, ErrLost) {
		t.Fatalf("renew past the deadline: %v, want ErrLost", err)
	}
	if after := ad.PTTL(ctx, key).Val(); after > before {
		t.Fatalf("renew past the deadline touched Redis: TTL %s -> %s", before, after)
	}
	if !a.Deadline().Equal(deadline) {
		t.Fatal("deadline moved")
	}
}

func TestRenewExtendsFromItsStart(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	var clk clock
	l := newLocker(t, []*redis.Client{s.Client()}, func(c *Config) { c.TTL = 10 * time.Second; c.Now = clk.Now })
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	start := clk.Now()
	if err := l.Renew(ctx, a); err != nil {
		t.Fatal(err)
	}
	want := start.Add(10*time.Second - 100*time.Millisecond - 2*time.Millisecond)
	if d := a.Deadline().Sub(want); d < 0 || d > 100*time.Millisecond {
		t.Fatalf("deadline %s off the renew start + TTL - drift", d)
	}
	if p := ad.PTTL(ctx, key).Val(); p < 9*time.Second {
		t.Fatalf("renew left PTTL %s", p)
	}
}

func TestRenewOfVanishedKeyIsLostAndDoesNotRecreate(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	a, err := l.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	ad.Del(ctx, key)
	deadline := a.Deadline()
	if err := l.Renew(ctx, a); !errors.Is(err, ErrLost) {
		t.Fatalf("renew of a vanished key: %v, want ErrLost", err)
	}
	if n := ad.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("renew re-created the key")
	}
	if !a.Deadline().Equal(deadline) {
		t.Fatal("a lost renew moved the deadline")
	}
}

func TestReleasePublishesWorkerID(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	ad := admin(t, s)
	notices := subscribe(t, ad)
	l := newLocker(t, []*redis.Client{s.Client()}, nil)
	ctx := t.Context()
	a, err := l.Acquire(ctx, "worker-7", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, notices, 2*time.Second); m.Payload != "worker-7" || m.Channel != keys.ReleasedChannel() {
		t.Fatalf("notice %q on %q", m.Payload, m.Channel)
	}
	if n := ad.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("release left keys")
	}
	if a.Valid() {
		t.Fatal("lease valid after release")
	}
	// A second (re-sent) release finds nothing and is fine.
	if err := l.Release(ctx, a); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := l.Renew(ctx, a); !errors.Is(err, ErrLost) {
		t.Fatalf("renew after release: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	l := &Locker{nodes: make([]redis.Scripter, 5), quorum: 3}
	ms := func(v ...int64) []int64 { return v }
	for _, tt := range []struct {
		pttls []int64
		want  time.Duration
	}{
		{ms(100, 300, 200), 100 * time.Millisecond},           // 3 held, 2 may stay held: the first expiry frees a quorum
		{ms(100, 300, 200, 400), 200 * time.Millisecond},      // 4 held: two must expire
		{ms(500, 100, 300, 400, 200), 300 * time.Millisecond}, // all held: three must expire
		{ms(-1, 100, 200), 100 * time.Millisecond},            // a key without TTL never expires
		{ms(-1, -1, 100, 200), 200 * time.Millisecond},        // two expire, two without TTL may stay
		{ms(-1, -1, -1, 100), 0},                              // three never expire: unknown
		{ms(0, 300, 200), time.Millisecond},                   // a key in its last millisecond: 1 ms, not unknown
	} {
		if got := l.retryAfter(tt.pttls); got != tt.want {
			t.Errorf("retryAfter(%v) = %s, want %s", tt.pttls, got, tt.want)
		}
	}
	one := &Locker{nodes: make([]redis.Scripter, 1), quorum: 1}
	if got := one.retryAfter(ms(1500)); got != 1500*time.Millisecond {
		t.Errorf("single node: %s", got)
	}
	if got := one.retryAfter(ms(-1)); got != 0 {
		t.Errorf("single node without TTL: %s", got)
	}
	if got := one.retryAfter(ms(0)); got != time.Millisecond {
		t.Errorf("single node in its last millisecond: %s, want 1ms", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func loadScripts(t *testing.T, c *redis.Client) {
	t.Helper()
	for _, s := range []*redis.Script{acquireScript, epochScript, setTokenScript, renewScript, releaseScript, holderScript, readEpochScript} {
		if err := s.Load(t.Context(), c).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
