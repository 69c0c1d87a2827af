package machine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockworker/lockworker/internal/tail"
)

// The harness runs a Machine inside a synctest bubble with fake callbacks
// that block until the test answers them, so each step is explicit and
// time only moves when the test sleeps on the bubble's fake clock.

const (
	renewInterval = 10 * time.Second
	retryDelay    = 3 * time.Second
)

var errFake = errors.New("fake failure")

// call is one invocation of a fake Call, waiting for its result.
type call struct {
	ctx    context.Context
	result chan error
}

func (c call) reply(err error) { c.result <- err }

type step struct {
	from, to State
	trigger  Trigger
}

// Messages the fake lane takes (Post).
type (
	notice     struct{}           // a release notice
	workEnded  struct{ lead int } // leadership lead's work ended by itself
	contending struct{ want bool }
)

type harness struct {
	t *testing.T
	m *Machine
	// lane is the fake lane; edit its fields before start.
	lane *fakeLane

	acquire, renew, stopWork, release chan call

	logs tail.Buffer // safe for the machine's goroutines

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// fakeLane is a Lane whose Calls block until the test answers them. Its
// fields are the owner goroutine's, like a real lane's; the test reads
// them only while the bubble is settled (synctest.Wait).
type fakeLane struct {
	h *harness
	// acquireCall, when set, replaces the blocking fake Acquire.
	acquireCall Call
	// routine is Lane.Routine; retryDelay is BeginWait's answer.
	routine    func(err error) bool
	retryDelay time.Duration
	// startWork, when set, runs in StartWork after the count.
	startWork func(lead int)

	contend     bool
	lead        int // leaderships started
	discarded   int // stale results discarded
	transitions []step
	settled     []State
}

// newHarness builds the machine over a fake lane; edit the lane to change
// a fake. Call start to run it. Must be called inside a bubble (the
// channels belong to it).
func newHarness(t *testing.T, edit ...func(*harness)) *harness {
	t.Helper()
	h := &harness{
		t:        t,
		acquire:  make(chan call, 4),
		renew:    make(chan call, 4),
		stopWork: make(chan call, 4),
		release:  make(chan call, 4),
		done:     make(chan struct{}),
	}
	h.lane = &fakeLane{h: h, contend: true, retryDelay: retryDelay, routine: func(error) bool { return false }}
	for _, e := range edit {
		e(h)
	}
	m, err := New(Config{
		Lane:   h.lane,
		Logger: slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

// fake is a Call that records itself on ch and returns what the test
// replies, or the context's error once its state is left.
func (h *harness) fake(ch chan call) Call {
	return func(ctx context.Context) Result {
		c := call{ctx: ctx, result: make(chan error, 1)}
		ch <- c
		select {
		case err := <-c.result:
			return fakeResult{l: h.lane, err: err}
		case <-ctx.Done():
			return fakeResult{l: h.lane, err: ctx.Err()}
		}
	}
}

type fakeResult struct {
	l   *fakeLane
	err error
}

func (r fakeResult) Apply() error                { return r.err }
func (r fakeResult) Discard(ctx context.Context) { r.l.discarded++ }

func (l *fakeLane) Acquire() Call {
	if l.acquireCall != nil {
		return l.acquireCall
	}
	return l.h.fake(l.h.acquire)
}
func (l *fakeLane) Renew() Call              { return l.h.fake(l.h.renew) }
func (l *fakeLane) StopWork() Call           { return l.h.fake(l.h.stopWork) }
func (l *fakeLane) Release() Call            { return l.h.fake(l.h.release) }
func (l *fakeLane) RenewIn() time.Duration   { return renewInterval }
func (l *fakeLane) BeginWait() time.Duration { return l.retryDelay }
func (l *fakeLane) Contends() bool           { return l.contend }
func (l *fakeLane) Routine(err error) bool   { return l.routine(err) }
func (l *fakeLane) Settled(s State)          { l.settled = append(l.settled, s) }

func (l *fakeLane) StartWork() {
	l.lead++
	if l.startWork != nil {
		l.startWork(l.lead)
	}
}

func (l *fakeLane) Transitioned(from, to State, trigger Trigger) {
	l.transitions = append(l.transitions, step{from, to, trigger})
}

func (l *fakeLane) Receive(msg any) (Move, bool) {
	switch msg := msg.(type) {
	case notice:
		return Move{Trigger: ReleaseNotice}, true
	case workEnded:
		if msg.lead != l.lead {
			return Move{}, false // an earlier leadership's: stale
		}
		return Move{Trigger: WorkEnded, Cause: errFake}, true
	case contending:
		l.contend = msg.want
	}
	return Move{}, false
}

// start runs the machine under ctx. If the test ends early, cleanup stops
// it and answers every call so the bubble can exit.
func (h *harness) start(ctx context.Context) {
	ctx, h.cancel = context.WithCancel(ctx)
	go func() {
		defer close(h.done)
		h.err = h.m.Run(ctx)
	}()
	h.t.Cleanup(func() {
		h.cancel()
		for {
			select {
			case <-h.done:
				return
			case c := <-h.acquire:
				c.reply(nil)
			case c := <-h.renew:
				c.reply(nil)
			case c := <-h.stopWork:
				c.reply(nil)
			case c := <-h.release:
				c.reply(nil)
			}
		}
	})
}

// next returns the pending call on ch, failing if there is none once the
// bubble has settled.
func (h *harness) next(ch chan call, name string) call {
	h.t.Helper()
	synctest.Wait()
	select {
	case c := <-ch:
		return c
	default:
		h.t.Fatalf("%s was not called (state %v)", name, h.m.State())
		return call{}
	}
}

func (h *harness) noCall(ch chan call, name string) {
	h.t.Helper()
	synctest.Wait()
	select {
	case <-ch:
		h.t.Fatalf("%s was called unexpectedly (state %v)", name, h.m.State())
	default:
	}
}

func (h *harness) wantState(want State) {
	h.t.Helper()
	synctest.Wait()
	if got := h.m.State(); got != want {
		h.t.Fatalf("state = %v, want %v", got, want)
	}
}

// finish waits for Run to return and checks it returned nil in idle.
func (h *harness) finish() {
	h.t.Helper()
	<-h.done
	if h.err != nil {
		h.t.Fatalf("Run = %v, want nil", h.err)
	}
	if got := h.m.State(); got != Idle {
		h.t.Fatalf("state after Run = %v, want idle", got)
	}
}

// stopThroughCleanup answers cleanup's StopWork and the Release that
// follows, as every stop must go.
func (h *harness) stopThroughCleanup() {
	h.t.Helper()
	h.wantState(Cleanup)
	h.next(h.stopWork, "StopWork in cleanup").reply(nil)
	h.wantState(ReleasingLock)
	h.next(h.release, "Release").reply(nil)
	h.finish()
}

func (h *harness) steps() []step {
	synctest.Wait()
	return slices.Clone(h.lane.transitions)
}

// workEnds reports that leadership n's work (1 = the first) ended by
// itself, as the work would.
func (h *harness) workEnds(n int) { h.m.Post(workEnded{lead: n}) }

// notify posts a release notice.
func (h *harness) notify() { h.m.Post(notice{}) }

func (h *harness) startedCount() int {
	synctest.Wait()
	return h.lane.lead
}

// Drive helpers: each leaves the machine in the named state with that
// state's callback (if any) still pending, and returns it.

func (h *harness) toAcquiring() call {
	h.t.Helper()
	h.start(h.t.Context())
	h.wantState(AcquiringLock)
	return h.next(h.acquire, "Acquire")
}

func (h *harness) toWorking() {
	h.t.Helper()
	h.toAcquiring().reply(nil)
	h.wantState(Working)
}

func (h *harness) toWaiting() {
	h.t.Helper()
	h.toAcquiring().reply(errFake)
	h.wantState(WaitingToAcquireLock)
}

func (h *harness) toRenew() call {
	h.t.Helper()
	h.toWorking()
	time.Sleep(renewInterval)
	h.wantState(RenewLock)
	return h.next(h.renew, "Renew")
}

func (h *harness) toPause() call {
	h.t.Helper()
	h.toRenew().reply(errFake)
	h.wantState(PauseWork)
	return h.next(h.stopWork, "StopWork in pause_work")
}

// logCount counts the lines of the harness's log that contain substr.
func (h *harness) logCount(substr string) int { return strings.Count(h.logs.String(), substr) }
