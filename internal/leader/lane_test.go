package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
)

// A lane leads once told to contend: its work runs with the lease's
// token, it renews at every tick while the work keeps running, and on
// Stop it stops the work, tells BeforeRelease (nil: stopped), releases
// the lock and Run returns. Its snapshot follows.
func TestLaneLeadsRenewsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		if s := r.snap(); s.Reason.Kind != Unplanned || s.Leads() {
			t.Fatalf("before the plan: %+v", s.Reason)
		}
		r.start()
		r.wantState(machine.Working)
		s := r.snap()
		if !s.Leads() || s.Token != 1 || s.Reason.Kind != Leading || s.Reason.String() != "" {
			t.Fatalf("leading: leads %v token %d reason %q", s.Leads(), s.Token, s.Reason)
		}
		if got := r.started(); !slices.Equal(got, []int64{1}) {
			t.Fatalf("work started with %v, want [1]", got)
		}
		for i := 1; i <= 3; i++ {
			time.Sleep(renewInterval)
			r.wantState(machine.Working)
			if n := r.renew.count(); n != i {
				t.Fatalf("%d renewals after %d ticks", n, i)
			}
		}
		if got := r.started(); len(got) != 1 {
			t.Fatalf("work restarted across renewals: %v", got)
		}
		r.lane.Stop()
		if err := <-r.done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		r.done <- nil // for the cleanup
		if _, _, released := r.lock.counts(); !slices.Equal(released, []int64{1}) {
			t.Fatalf("released %v, want [1]", released)
		}
		if tokens, causes := r.beforeRelease(); !slices.Equal(tokens, []int64{1}) || causes[0] != nil {
			t.Fatalf("BeforeRelease got %v %v, want token 1 with no cause", tokens, causes)
		}
		if s := r.lane.Snapshot(); s.State != machine.Idle || s.Leads() || s.Reason.Kind != Stopping {
			t.Fatalf("after Stop: %v leads %v reason %v", s.State, s.Leads(), s.Reason.Kind)
		}
	})
}

// A follower says once, at INFO, who leads and that it waits, and again
// only when that changes; its retries log nothing at INFO. It reads who
// holds the lock once per holder's token.
func TestFollowerSaysWhoLeadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.lock.heldBy("w1", 7, time.Minute)
		r.start()
		r.wantState(machine.WaitingToAcquireLock)
		for range 5 {
			time.Sleep(retryInterval + retryInterval/5) // past the jittered wait
		}
		acquires, holders, _ := r.lock.counts()
		if acquires < 6 || holders != 1 {
			t.Fatalf("%d attempts read the holder %d times, want at least 6 and once", acquires, holders)
		}
		info := r.infoLines(0)
		waits := 0
		for _, l := range info {
			if strings.Contains(l, `msg="Waiting to lead"`) {
				waits++
				if !strings.Contains(l, `reason="held by w1 (token 7) until `) || !strings.Contains(l, "why=held") {
					t.Errorf("the follower's line does not say who leads: %s", l)
				}
			}
		}
		if waits != 1 || strings.Count(strings.Join(info, "\n"), "Trying to acquire lock") != 1 {
			t.Fatalf("over %d attempts the follower said at INFO:\n%s\nwant one \"Waiting to lead\" and one \"Trying to acquire lock\"",
				acquires, strings.Join(info, "\n"))
		}
		s := r.snap()
		if s.Reason.Kind != HeldElsewhere || s.Reason.Holder != "w1" || s.Reason.Token != 7 || s.Observed != 7 {
			t.Fatalf("reason %+v, observed %d", s.Reason, s.Observed)
		}

		mark := len(r.logs.String())
		r.lock.heldBy("w2", 8, time.Minute)
		time.Sleep(retryInterval + retryInterval/5)
		time.Sleep(retryInterval + retryInterval/5)
		if _, holders, _ := r.lock.counts(); holders != 2 {
			t.Fatalf("holder read %d times after a new leader, want 2", holders)
		}
		if info := r.infoLines(mark); len(info) != 1 || !strings.Contains(info[0], `reason="held by w2 (token 8) until `) {
			t.Fatalf("a new leader said at INFO:\n%s\nwant one line naming w2", strings.Join(info, "\n"))
		}
	})
}

// A follower that found the lock held does not sleep past the holder's
// remaining TTL (plus a little jitter); otherwise it waits the jittered
// retry interval.
func TestFollowerWaitsForTheHoldersTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl    time.Duration
		lo, hi time.Duration
	}{
		{300 * time.Millisecond, 300 * time.Millisecond, 325 * time.Millisecond},
		{0, retryInterval * 9 / 10, retryInterval * 11 / 10}, // TTL unknown
		{time.Minute, retryInterval * 9 / 10, retryInterval * 11 / 10},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newLaneRig(t)
				r.lock.heldBy("w1", 3, tc.ttl)
				r.start()
				for range 3 {
					if d := r.gap(); d < tc.lo || d > tc.hi {
						t.Fatalf("waited %s, want within [%s, %s]", d, tc.lo, tc.hi)
					}
				}
			})
		})
	}
}

// An acquire that wins after its state was left (it ignored its context,
// like a slow network call) starts no work, and its lease is released at
// once: it never waits out its TTL.
func TestStaleAcquireIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		win := make(chan struct{})
		r.lock.set(func(ctx context.Context, floor int64) (*redislock.Lease, error) {
			<-win // deaf to ctx
			return r.lock.grant("w", floor), nil
		})
		r.start()
		r.wantState(machine.AcquiringLock)
		if k := r.snap().Reason.Kind; k != Acquiring {
			t.Fatalf("reason during the first attempt: %v", k)
		}
		r.lane.Contend(false) // the plan moves the partition away
		r.wantState(machine.Cleanup)
		close(win)
		r.wantState(machine.Idle)
		if _, _, released := r.lock.counts(); !slices.Equal(released, []int64{1}) {
			t.Fatalf("released %v, want the late lease 1", released)
		}
		if got := r.started(); len(got) != 0 {
			t.Fatalf("work started for a stale acquire: %v", got)
		}
		if k := r.snap().Reason.Kind; k != NotShare {
			t.Fatalf("reason after the plan moved it: %v", k)
		}
	})
}

// StepDown acts only for the leadership that holds the token: its work
// ends with ErrSteppedDown, BeforeRelease hears why, the lock is
// released, and the lane holds off for StepDownHold, deaf to release
// notices and avoiding its partition; then it leads again.
func TestStepDownHoldsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.start()
		r.wantState(machine.Working)
		r.lane.StepDown(2) // not its token
		r.wantState(machine.Working)
		r.lane.StepDown(1)
		r.wantState(machine.WaitingToAcquireLock)
		if tokens, causes := r.beforeRelease(); !slices.Equal(tokens, []int64{1}) || !errors.Is(causes[0], ErrSteppedDown) {
			t.Fatalf("BeforeRelease got %v %v", tokens, causes)
		}
		s := r.snap()
		if !s.Avoiding() || s.Reason.Kind != SteppedDown || !strings.Contains(s.Reason.String(), "quiet until") {
			t.Fatalf("after the step-down: avoiding %v, reason %q", s.Avoiding(), s.Reason)
		}
		acquires, _, _ := r.lock.counts()
		r.lane.NotifyReleased()
		time.Sleep(2*retryInterval - time.Millisecond) // the hold: 2 retry intervals
		if n, _, _ := r.lock.counts(); n != acquires {
			t.Fatalf("%d attempts during the hold", n-acquires)
		}
		time.Sleep(time.Millisecond)
		r.wantState(machine.Working)
		if got := r.started(); !slices.Equal(got, []int64{1, 2}) {
			t.Fatalf("leaderships %v, want [1 2]", got)
		}
		if r.snap().Avoiding() {
			t.Fatal("still avoiding after the hold")
		}
	})
}

// A guard that refuses is the attempt's answer (Redis is not asked), and
// the reason says why; when it stops refusing (GuardsChanged), the lane
// tries at once. A guard that refuses while the lane leads ends the
// work, and so the leadership.
func TestGuardsRefuseAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refusal error = errors.New("Redis evicts keys")
		r := newLaneRig(t, func(r *laneRig, c *Config) {
			c.MayLead = func() error {
				r.mu.Lock()
				defer r.mu.Unlock()
				return refusal
			}
		})
		refuse := func(err error) { r.mu.Lock(); refusal = err; r.mu.Unlock(); r.lane.GuardsChanged() }
		r.start()
		r.wantState(machine.WaitingToAcquireLock)
		if n, _, _ := r.lock.counts(); n != 0 {
			t.Fatalf("%d attempts reached the lock while a guard refused", n)
		}
		if s := r.snap(); s.Reason.Kind != Refused || s.Reason.String() != "Redis evicts keys" {
			t.Fatalf("reason %+v", s.Reason)
		}
		refuse(nil)
		r.wantState(machine.Working) // at once: no time passed
		refuse(errors.New("Redis evicts keys again"))
		r.wantState(machine.WaitingToAcquireLock)
		if tokens, causes := r.beforeRelease(); len(tokens) != 1 || causes[0] == nil || causes[0].Error() != "Redis evicts keys again" {
			t.Fatalf("BeforeRelease got %v %v: want the guard's refusal as the cause", tokens, causes)
		}
		if _, _, released := r.lock.counts(); !slices.Equal(released, []int64{1}) {
			t.Fatalf("released %v", released)
		}
		if !strings.Contains(r.logs.String(), `trigger=WORK_ENDED err="Redis evicts keys again"`) {
			t.Fatalf("the guard's refusal did not end the work:\n%s", r.logs)
		}
	})
}

// Work that ends by itself ends its leadership: stopped, released, and
// acquired afresh with a new token after a wait that grows with each
// consecutive quick end (from a quarter of the retry interval, doubling,
// jittered), deaf to release notices; a healthy leadership starts the
// count again.
func TestQuickEndsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		healthy := false
		r := newLaneRig(t)
		r.work = func(ctx context.Context, _ Lease) error {
			if healthy {
				<-ctx.Done()
				return nil
			}
			return errors.New("cannot work")
		}
		r.start()
		unit := retryInterval / 4
		var waits []time.Duration
		for range 5 {
			r.wantState(machine.WaitingToAcquireLock)
			n := len(r.started())
			r.lane.NotifyReleased() // not heard: backing off
			start := time.Now()
			for len(r.started()) == n {
				time.Sleep(time.Millisecond)
			}
			waits = append(waits, time.Since(start))
		}
		for i, w := range waits {
			hi := unit << min(i, 4)
			if w < hi/2 || w > hi {
				t.Errorf("wait %d after a quick end: %s, want within [%s, %s] (all: %v)", i+1, w, hi/2, hi, waits)
			}
		}
		if k := r.snap().Reason; k.Kind != WorkEnded || !strings.Contains(k.String(), "cannot work") {
			t.Fatalf("reason %q", k)
		}
	})
}

// Consecutive acquire errors make the wait grow from one retry interval
// to 4 (jittered: half of it at least); a success ends the back-off.
func TestAcquireErrorsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.failWith(errDown)
		r.start()
		for i := range 5 {
			hi := retryInterval << min(i, 2)
			if d := r.gap(); d < hi/2 || d > hi {
				t.Fatalf("wait after error %d: %s, want within [%s, %s]", i+1, d, hi/2, hi)
			}
		}
		if s := r.snap(); s.Reason.Kind != NoAnswer || s.RedisOK || !strings.Contains(s.LastError, "connection refused") {
			t.Fatalf("reason %+v, redisOK %v, last error %q", s.Reason, s.RedisOK, s.LastError)
		}
		r.failWith(nil)
		r.gap()
		r.wantState(machine.Working)
		r.lane.Contend(false)
		r.wantState(machine.Idle)
		r.lane.Contend(true)
		r.wantState(machine.Working)
		r.lane.StepDown(r.snap().Token)
		r.wantState(machine.WaitingToAcquireLock)
		r.failWith(errDown) // the back-off starts again from one interval
		time.Sleep(2 * retryInterval)
		if d := r.gap(); d < retryInterval/2 || d > retryInterval {
			t.Fatalf("first wait after a success: %s, want within [%s, %s]", d, retryInterval/2, retryInterval)
		}
	})
}

// An attempt whose token did not reach a replica (ErrReplicas: the lock
// is free, a replica is still joining) is retried after 100 ms, backing
// off to 2 s but never past the retry interval; the reason says a master
// is short of replicas.
func TestReplicaErrorsRetrySoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.failWith(&redislock.ReplicasError{Master: "m:1", Online: 0, Min: 1, Err: redislock.ErrReplicas})
		r.start()
		for i := range 7 {
			hi := min(100*time.Millisecond<<i, 2*time.Second)
			if d := r.gap(); d < hi/2 || d > hi {
				t.Fatalf("wait after shortage %d: %s, want within [%s, %s]", i+1, d, hi/2, hi)
			}
		}
		if k := r.snap().Reason.Kind; k != FewReplicas {
			t.Fatalf("reason %v", k)
		}
	})
}

// The work's end, reported late for an earlier leadership, does not move
// the current one; a panic in the work is logged once with its stack
// and ends that leadership, not the process.
func TestWorkEndsAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		first := true
		r.work = func(ctx context.Context, _ Lease) error {
			if first {
				first = false
				panic("boom")
			}
			<-ctx.Done()
			return nil
		}
		r.start()
		for len(r.started()) < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		r.wantState(machine.Working)
		logs := r.logs.String()
		if n := strings.Count(logs, `msg="work panicked" panic=boom`); n != 1 {
			t.Fatalf("panic logged %d times, want once:\n%s", n, logs)
		}
		if n := strings.Count(logs, " [running"); n != 1 || !strings.Contains(logs, "guarded") {
			t.Fatalf("want the stack once (%d stacks):\n%s", n, logs)
		}
		if !strings.Contains(logs, `trigger=WORK_ENDED err="leader: work panicked: boom"`) {
			t.Fatalf("the panic did not end the leadership:\n%s", logs)
		}
		if got := r.started(); !slices.Equal(got, []int64{1, 2}) {
			t.Fatalf("leaderships %v", got)
		}
	})
}

// A snapshot says the lane leads only while its work runs: one published
// while leading stops saying so the moment the work has ended, before
// the lane hears of it.
func TestSnapshotFollowsTheWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		stop := make(chan struct{})
		r.work = func(context.Context, Lease) error { <-stop; return nil }
		r.start()
		r.wantState(machine.Working)
		s := r.snap()
		if !s.Leads() || s.LeaseLeft() <= 0 {
			t.Fatal("not leading while the work runs")
		}
		close(stop)
		synctest.Wait()
		if s.Leads() || s.LeaseLeft() != 0 {
			t.Fatal("the snapshot taken while leading still says it leads after the work returned")
		}
		if !strings.Contains(r.logs.String(), "trigger=WORK_ENDED err=\""+ErrWorkReturned.Error()) {
			t.Fatalf("the work's return did not end the leadership:\n%s", r.logs)
		}
	})
}

// Every acquire passes the highest token the lane has seen (its own, a
// holder's, what Observe was told) as the floor.
func TestObservedTokensAreTheFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.lock.heldBy("w1", 5, time.Minute)
		r.start()
		r.lane.Observe(9)
		r.lane.Observe(4) // lower: changes nothing
		synctest.Wait()
		r.lock.set(nil)
		time.Sleep(2 * retryInterval)
		r.wantState(machine.Working)
		r.lock.mu.Lock()
		floors := slices.Clone(r.lock.floors)
		r.lock.mu.Unlock()
		if floors[0] != 0 || floors[len(floors)-1] != 9 {
			t.Fatalf("floors %v: want 0 first, 9 last", floors)
		}
		if s := r.snap(); s.Token != 10 || s.Observed != 10 {
			t.Fatalf("token %d, observed %d, want 10 and 10", s.Token, s.Observed)
		}
	})
}

// A lane that stops contending gives its leadership up and waits in
// idle, saying it is not this replica's share.
func TestNotShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newLaneRig(t)
		r.start()
		r.wantState(machine.Working)
		r.lane.Contend(false)
		r.wantState(machine.Idle)
		s := r.snap()
		if s.Reason.Kind != NotShare || s.Reason.String() != "not this replica's share" {
			t.Fatalf("reason %q", s.Reason)
		}
		if tokens, causes := r.beforeRelease(); len(tokens) != 1 || causes[0] != nil {
			t.Fatalf("a handover told BeforeRelease %v %v", tokens, causes)
		}
		if strings.Contains(strings.Join(r.infoLines(0), "\n"), "Waiting to lead") {
			t.Fatalf("a lane that is not this replica's share says so at INFO:\n%s", r.logs)
		}
	})
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{Partition: -1, RetryInterval: -time.Second})
	for _, want := range []string{"Partition", "Lock", "Renewer", "WorkerID", "Work", "RetryInterval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New's error %v does not name %s", err, want)
		}
	}
}

func TestHeldByAnother(t *testing.T) {
	held := &redislock.HeldError{TTL: time.Second}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{held, true},
		{fmt.Errorf("acquire: %w", held), true},
		{redislock.ErrNotAcquired, false},
		{errDown, false},
		{nil, false},
	} {
		if got := HeldByAnother(tc.err); got != tc.want {
			t.Errorf("HeldByAnother(%v) = %v", tc.err, got)
		}
	}
}

func TestReasonStrings(t *testing.T) {
	until := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.Local)
	for _, tc := range []struct {
		r    Reason
		want string
	}{
		{Reason{}, ""},
		{Reason{Kind: HeldElsewhere, Holder: "w1", Token: 7, Until: until}, "held by w1 (token 7) until 03:04:05.006"},
		{Reason{Kind: HeldElsewhere, Token: 7, Until: until}, "held by another replica (token 7) until 03:04:05.006"},
		{Reason{Kind: SteppedDown, Until: until}, "stepped down on request, quiet until 03:04:05.006"},
		{Reason{Kind: WorkEnded, Err: "stale token"}, "work ended (stale token)"},
		{Reason{Kind: Refused, Err: "Redis evicts keys"}, "Redis evicts keys"},
		{Reason{Kind: LeaseLost, Err: "gone"}, "lease lost: gone"},
		{Reason{Kind: NotShare}, "not this replica's share"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.r.Kind, got, tc.want)
		}
	}
	for k := Leading; k <= LeaseLost; k++ {
		if strings.HasPrefix(k.String(), "ReasonKind(") {
			t.Errorf("kind %d has no name", int(k))
		}
	}
}
