package machine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
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

// call is one invocation of a fake callback, waiting for its result.
type call struct {
	ctx    context.Context
	result chan error
}

func (c call) reply(err error) { c.result <- err }

type step struct {
	from, to State
	trigger  Trigger
}

type harness struct {
	t *testing.T
	m *Machine

	acquire, renew, stopWork, release chan call

	mu          sync.Mutex
	started     int
	ended       []func(error) // each leadership's ended func, in order
	transitions []step
	logs        tail.Buffer // safe for the machine's goroutines

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// newHarness builds the machine; edit cfg to replace a fake. Call start to
// run it. Must be called inside a bubble (the channels belong to it).
func newHarness(t *testing.T, edit ...func(*harness, *Config)) *harness {
	t.Helper()
	h := &harness{
		t:        t,
		acquire:  make(chan call, 4),
		renew:    make(chan call, 4),
		stopWork: make(chan call, 4),
		release:  make(chan call, 4),
		done:     make(chan struct{}),
	}
	cfg := Config{
		Acquire:  h.fake(h.acquire),
		Renew:    h.fake(h.renew),
		Release:  h.fake(h.release),
		StopWork: h.fake(h.stopWork),
		StartWork: func(ended func(error)) {
			h.mu.Lock()
			h.started++
			h.ended = append(h.ended, ended)
			h.mu.Unlock()
		},
		RenewInterval: renewInterval,
		RetryDelay:    func() time.Duration { return retryDelay },
		Logger:        slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnTransition: func(from, to State, trigger Trigger) {
			h.mu.Lock()
			h.transitions = append(h.transitions, step{from, to, trigger})
			h.mu.Unlock()
		},
	}
	for _, e := range edit {
		e(h, &cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

// fake records the call and returns what the test replies, or the
// context's error once its state is left.
func (h *harness) fake(ch chan call) func(context.Context) error {
	return func(ctx context.Context) error {
		c := call{ctx: ctx, result: make(chan error, 1)}
		ch <- c
		select {
		case err := <-c.result:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.transitions)
}

// workEnds reports the end of leadership n's work (1 = the first), as
// the work would.
func (h *harness) workEnds(n int, err error) {
	h.t.Helper()
	h.mu.Lock()
	if n < 1 || n > len(h.ended) {
		h.mu.Unlock()
		h.t.Fatalf("no leadership %d (%d started)", n, len(h.ended))
	}
	ended := h.ended[n-1]
	h.mu.Unlock()
	ended(err)
}

func (h *harness) startedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started
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
