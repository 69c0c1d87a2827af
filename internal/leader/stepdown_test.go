package leader

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// released records BeforeRelease's calls.
type released struct {
	mu     sync.Mutex
	tokens []int64
	causes []error
}

func (r *released) hook(_ context.Context, token int64, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens, r.causes = append(r.tokens, token), append(r.causes, cause)
}

// last is the latest call's token and cause, and how many calls came.
func (r *released) last() (token int64, n int, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tokens) == 0 {
		return 0, 0, nil
	}
	return r.tokens[len(r.tokens)-1], len(r.tokens), r.causes[len(r.causes)-1]
}

// TestStepDown: only the current leadership's token steps down, once; its
// work ends with ErrSteppedDown, a renewal meanwhile still succeeds,
// BeforeRelease hears why, and the next
// wait is the hold, deaf to release notices. A stopped leadership tells
// BeforeRelease nil, one whose work failed tells its error (and
// LastError keeps it); a stale lease is released without a word.
func TestStepDown(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	locker, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:stepdown").Lease(), TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var rel released
	fail := false
	ld, err := New(Config{Lock: locker, WorkerID: "w", RetryInterval: time.Second, StepDownHold: 3 * time.Second,
		BeforeRelease: rel.hook,
		Work: func(ctx context.Context, _ Lease) error {
			if fail {
				return errors.New("cannot work")
			}
			<-ctx.Done()
			return ctx.Err() // how a job loop may take it; the cause still wins
		}})
	if err != nil {
		t.Fatal(err)
	}
	lead := func() (int64, chan error) {
		t.Helper()
		if err := ld.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		token := ld.currentLease().Token() // before the work starts: failing work ends at once
		ended := make(chan error, 1)
		ld.StartWork(func(err error) { ended <- err })
		return token, ended
	}
	give := func() {
		t.Helper()
		if err := ld.StopWork(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := ld.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}

	token, ended := lead()
	if ld.StepDown(token + 1) {
		t.Fatal("stepped down for another token")
	}
	if !ld.StepDown(token) {
		t.Fatal("did not step down for its own token")
	}
	if err := <-ended; !errors.Is(err, ErrSteppedDown) {
		t.Fatalf("work ended with %v, want ErrSteppedDown", err)
	}
	if ld.StepDown(token) || ld.Status().Leader {
		t.Fatal("a second step-down acted, or Status still says leader")
	}
	// A renewal that lands while the step-down is under way keeps the
	// lease, so the way out is a release with the notice, not a lost lease
	// (renew_lock -> pause_work, which releases nothing).
	if err := ld.Renew(t.Context()); err != nil {
		t.Fatalf("a renewal during the step-down failed: %v", err)
	}
	give()
	if tok, n, cause := rel.last(); n != 1 || tok != token || !errors.Is(cause, ErrSteppedDown) {
		t.Fatalf("BeforeRelease got token %d cause %v (%d calls)", tok, cause, n)
	}
	if d := ld.RetryDelay(); d != 3*time.Second || ld.WantsNotice() {
		t.Fatalf("after a step-down: wait %s (want the 3s hold), hears notices %v", d, ld.WantsNotice())
	}
	if msg, _ := ld.LastError(); msg != "" {
		t.Errorf("a step-down is no error, LastError = %q", msg)
	}

	token, _ = lead() // stopped: a shutdown
	give()
	if tok, n, cause := rel.last(); n != 2 || tok != token || cause != nil {
		t.Fatalf("after a stop: BeforeRelease got token %d cause %v (%d calls)", tok, cause, n)
	}

	fail = true
	token, ended = lead()
	<-ended
	give()
	if tok, n, cause := rel.last(); n != 3 || tok != token || cause == nil || !strings.Contains(cause.Error(), "cannot work") {
		t.Fatalf("after a failure: BeforeRelease got token %d cause %v (%d calls)", tok, cause, n)
	}
	if msg, at := ld.LastError(); !strings.Contains(msg, "cannot work") || time.Since(at) > time.Minute {
		t.Errorf("LastError = %q at %v", msg, at)
	}

	// A lease whose deadline passed is no leadership given up.
	short, err := redislock.New(redislock.Config{Nodes: []redis.Scripter{s.Client()}, Keys: keyspace.MustNew("lw:stepdown:short").Lease(), TTL: time.Second,
		NodeTimeout: 500 * time.Millisecond}) // generous: on a busy host the acquire itself may take a while
	if err != nil {
		t.Fatal(err)
	}
	var rel2 released
	ld2, err := New(Config{Lock: short, WorkerID: "w2", RetryInterval: time.Second, BeforeRelease: rel2.hook,
		Work: func(ctx context.Context, _ Lease) error { <-ctx.Done(); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := ld2.Acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	lease := ld2.currentLease()
	waitUntil(t, 5*time.Second, "the short lease's deadline", func() bool { return !lease.Valid() })
	if err := ld2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := rel2.last(); n != 0 {
		t.Errorf("BeforeRelease called for an expired lease (%d calls)", n)
	}
}

// TestStepDownHandsOver: with the machine, a step-down releases the lock
// with a notice, rejoins the followers, and (alone here) leads again after
// the hold with a fresh token.
func TestStepDownHandsOver(t *testing.T) {
	r := newEndingRig(t, func(ctx context.Context, lease Lease) error {
		<-ctx.Done()
		return nil
	})
	ps := r.admin.Subscribe(t.Context(), keyspace.MustNew("lw:ending").Lease().ReleasedChannel())
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := receiveToken(t, r.tokens, 5*time.Second)
	waitUntil(t, 5*time.Second, "leading", func() bool { return r.ld.Status().Leader })
	if !r.ld.StepDown(first) {
		t.Fatal("StepDown refused the leader's own token")
	}
	select {
	case <-ps.Channel():
	case <-time.After(5 * time.Second):
		t.Fatal("no release notice after the step-down")
	}
	second := receiveToken(t, r.tokens, 5*time.Second)
	if second <= first {
		t.Fatalf("tokens %d then %d", first, second)
	}
	for _, step := range []string{"working>cleanup:WORK_ENDED", "releasing_lock>waiting_to_acquire_lock:LOCK_RELEASED"} {
		if !r.has(step) {
			t.Errorf("no %s transition", step)
		}
	}
}
