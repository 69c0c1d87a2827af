package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var keys = keyspace.MustNew("op:leader")

type rig struct {
	c      *redis.Client
	locker *redislock.Locker
	queue  *jobs.Queue
	op     *Operator
}

func newRig(t *testing.T) *rig {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	r := &rig{c: s.Client()}
	var err error
	if r.locker, err = redislock.New(redislock.Config{Nodes: []redis.Scripter{r.c}, Keys: keys.Lease(), TTL: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if r.queue, err = jobs.New(jobs.Config{Client: r.c, Keys: keys.Lease()}); err != nil {
		t.Fatal(err)
	}
	holder := func(ctx context.Context, _ int) (redislock.Holder, error) { return r.locker.Holder(ctx) }
	if r.op, err = New(Config{Client: r.c, Holder: holder, Queues: []*jobs.Queue{r.queue}, Keys: keys}); err != nil {
		t.Fatal(err)
	}
	return r
}

// leader plays the leading replica's side: on each control notice it
// reads the request and, when it names its token, releases the lock and
// lets successor acquire. It ignores the first notice (as if lost).
func (r *rig) leader(t *testing.T, lease *redislock.Lease, successor string) (stop func(), notices *atomic.Int64) {
	t.Helper()
	notices = &atomic.Int64{}
	ps := r.c.Subscribe(t.Context(), keys.ControlChannel())
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ps.Channel() {
			if notices.Add(1) == 1 {
				continue
			}
			tok, err := r.op.Requested(context.Background(), 0)
			if err != nil || tok != lease.Token() {
				continue
			}
			_ = r.locker.Release(context.Background(), lease)
			if successor != "" {
				_, _ = r.locker.Acquire(context.Background(), successor, 0)
			}
		}
	})
	return func() { _ = ps.Close(); wg.Wait() }, notices
}

func TestStepDown(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	if _, err := r.op.StepDown(ctx, 0, 0); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("StepDown with no leader: %v", err)
	}
	lease, err := r.locker.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.op.StepDown(ctx, 0, 0); err == nil || !strings.Contains(err.Error(), "no replica listens") {
		t.Fatalf("StepDown with nobody listening: %v", err)
	}
	stop, notices := r.leader(t, lease, "b")
	defer stop()
	h, err := r.op.StepDown(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.From.WorkerID != "a" || h.From.Token != lease.Token() || !h.To.Held || h.To.WorkerID != "b" || h.To.Token <= lease.Token() || h.Took <= 0 {
		t.Fatalf("handover %+v", h)
	}
	if n := notices.Load(); n < 2 {
		t.Errorf("%d notices: the lost first one was not sent again", n)
	}
}

// TestStepDownNamesItsLeadership: a step-down for a token asks only
// that leadership; once it has ended, a second request for the same
// token (a double click, a retry) is refused and asks the next leader
// nothing.
func TestStepDownNamesItsLeadership(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	if _, err := r.op.StepDown(ctx, 0, 1); !errors.Is(err, ErrEnded) {
		t.Fatalf("StepDown of token 1 with no leader: %v, want ErrEnded", err)
	}
	lease, err := r.locker.Acquire(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := r.leader(t, lease, "b")
	defer stop()
	if _, err := r.op.StepDown(ctx, 0, lease.Token()+1); !errors.Is(err, ErrEnded) {
		t.Fatalf("StepDown of a token nobody holds: %v, want ErrEnded", err)
	}
	h, err := r.op.StepDown(ctx, 0, lease.Token())
	if err != nil || h.From.Token != lease.Token() || h.To.WorkerID != "b" {
		t.Fatalf("StepDown of the leader's token = %+v, %v", h, err)
	}
	_, err = r.op.StepDown(ctx, 0, lease.Token())
	if !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), fmt.Sprintf("b leads now, with token %d", h.To.Token)) {
		t.Fatalf("second StepDown of token %d = %v, want ErrEnded naming b", lease.Token(), err)
	}
	if got, err := r.op.Requested(ctx, 0); err != nil || got != lease.Token() {
		t.Fatalf("the step-down request holds %d (%v): b, token %d, was asked to step down", got, err, h.To.Token)
	}
	if _, err := r.op.StepDown(ctx, 0, -1); err == nil {
		t.Fatal("StepDown of token -1 accepted")
	}
}

// TestStepDownReleasedOnly: the leader let go and nobody took over before
// the deadline: a success that says so.
func TestStepDownReleasedOnly(t *testing.T) {
	r := newRig(t)
	lease, err := r.locker.Acquire(t.Context(), "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := r.leader(t, lease, "")
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	h, err := r.op.StepDown(ctx, 0, 0)
	if err != nil || h.To.Held || h.Took <= 0 {
		t.Fatalf("StepDown = %+v, %v", h, err)
	}
}

// TestStepDownRefused: a leader that does not let go makes StepDown fail
// when its context ends, naming the leader.
func TestStepDownRefused(t *testing.T) {
	r := newRig(t)
	if _, err := r.locker.Acquire(t.Context(), "stubborn", 0); err != nil {
		t.Fatal(err)
	}
	ps := r.c.Subscribe(t.Context(), keys.ControlChannel()) // listens, never acts
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := r.op.StepDown(ctx, 0, 0); err == nil || !strings.Contains(err.Error(), "stubborn") {
		t.Fatalf("StepDown = %v, want it to name the leader that did not step down", err)
	}
}

// TestQueueActionsAnnounce: pause, resume and requeue change the queue and
// say so on the control channel.
func TestQueueActionsAnnounce(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	ps := r.c.Subscribe(ctx, keys.ControlChannel())
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.op.Pause(ctx, AllPartitions); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.queue.Stats(ctx); !s.Paused {
		t.Fatal("not paused")
	}
	if err := r.op.Resume(ctx, AllPartitions); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.queue.Stats(ctx); s.Paused {
		t.Fatal("still paused")
	}
	if _, err := r.op.Requeue(ctx, "01NOSUCHJOB"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Requeue of no dead letter: %v", err)
	}
	var got []string
	for len(got) < 2 {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Payload)
	}
	if strings.Join(got, ",") != "pause,resume" {
		t.Errorf("announced %v", got)
	}
	if tok, err := r.op.Requested(ctx, 0); err != nil || tok != 0 {
		t.Errorf("Requested with no request = %d, %v", tok, err)
	}
}

// TestPartitions: pause and resume act on one partition or on all; a
// step-down request names its partition; a partition out of range is
// refused.
func TestPartitions(t *testing.T) {
	s := redistest.Start(t, redistest.Options{})
	c := s.Client()
	var queues []*jobs.Queue
	for p := range 3 {
		q, err := jobs.New(jobs.Config{Client: c, Keys: keys.Partition(p, 3), Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	op, err := New(Config{Client: c, Queues: queues, Keys: keys,
		Holder: func(context.Context, int) (redislock.Holder, error) { return redislock.Holder{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	paused := func() []bool {
		var out []bool
		for _, q := range queues {
			st, err := q.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, st.Paused)
		}
		return out
	}
	if err := op.Pause(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := paused(); !slices.Equal(got, []bool{false, true, false}) {
		t.Fatalf("after pausing partition 1: %v", got)
	}
	if err := op.Pause(ctx, AllPartitions); err != nil {
		t.Fatal(err)
	}
	if err := op.Resume(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := paused(); !slices.Equal(got, []bool{true, true, false}) {
		t.Fatalf("after pausing all and resuming 2: %v", got)
	}
	for _, bad := range []int{-2, 3} {
		if err := op.Pause(ctx, bad); err == nil || !strings.Contains(err.Error(), "no partition") {
			t.Errorf("Pause(%d) = %v, want refused", bad, err)
		}
		if _, err := op.StepDown(ctx, bad, 0); err == nil {
			t.Errorf("StepDown(%d) accepted", bad)
		}
	}
	c.Set(ctx, keys.Partition(2, 3).StepDown(), 7, time.Minute)
	if tok, err := op.Requested(ctx, 2); err != nil || tok != 7 {
		t.Fatalf("partition 2's request: %d, %v", tok, err)
	}
	if tok, err := op.Requested(ctx, 1); err != nil || tok != 0 {
		t.Fatalf("partition 1's request: %d, %v; want none", tok, err)
	}
}
