package leader

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

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/redislock"
	"github.com/lockworker/lockworker/internal/tail"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The lane's tests run the real Lane and machine inside a synctest bubble
// over a fake lock and a fake renewer: time moves only when the test
// sleeps on the bubble's clock, and every step is explicit.

const (
	retryInterval = 4 * time.Second
	renewInterval = 5 * time.Second
	leaseTTL      = time.Hour // the fake's leases outlive every test: their deadline never moves
)

var errDown = errors.New("redislock: node node0: connection refused")

// fakeLock grants a lease with the next token unless answer says
// otherwise, and records what it was asked.
type fakeLock struct {
	mu sync.Mutex
	// answer, when set, answers Acquire instead.
	answer   func(ctx context.Context, floor int64) (*redislock.Lease, error)
	holder   redislock.Holder
	epoch    int64
	acquires int
	floors   []int64
	holders  int     // Holder reads
	released []int64 // the tokens released
}

func (f *fakeLock) Acquire(ctx context.Context, workerID string, floor int64) (*redislock.Lease, error) {
	f.mu.Lock()
	f.acquires++
	f.floors = append(f.floors, floor)
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		return answer(ctx, floor)
	}
	return f.grant(workerID, floor), nil
}

// grant mints the next token above floor.
func (f *fakeLock) grant(workerID string, floor int64) *redislock.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = max(f.epoch, floor) + 1
	return redislock.NewLease(workerID, f.epoch, time.Now().Add(leaseTTL))
}

func (f *fakeLock) Release(_ context.Context, lease *redislock.Lease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, lease.Token())
	return nil
}

func (f *fakeLock) Reissue(_ context.Context, lease *redislock.Lease, floor int64) (*redislock.Lease, error) {
	return f.grant("w", floor), nil
}

func (f *fakeLock) Holder(context.Context) (redislock.Holder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holders++
	return f.holder, nil
}

func (f *fakeLock) set(answer func(ctx context.Context, floor int64) (*redislock.Lease, error)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func (f *fakeLock) counts() (acquires, holders int, released []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acquires, f.holders, slices.Clone(f.released)
}

// heldBy makes every acquire find the lock held by worker with token.
func (f *fakeLock) heldBy(worker string, token int64, ttl time.Duration) {
	f.mu.Lock()
	f.holder = redislock.Holder{WorkerID: worker, Token: token, TTL: ttl, Held: true}
	f.mu.Unlock()
	f.set(func(context.Context, int64) (*redislock.Lease, error) {
		return nil, &redislock.HeldError{TTL: ttl, Token: token}
	})
}

// fakeRenewer renews every lease (their deadline never moves: see
// leaseTTL) unless err says otherwise, and ticks every renewInterval.
type fakeRenewer struct {
	mu      sync.Mutex
	err     error
	renewed int
}

func (f *fakeRenewer) Renew(context.Context, int, *redislock.Lease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed++
	return f.err
}

func (f *fakeRenewer) Next() time.Duration { return renewInterval }

func (f *fakeRenewer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renewed
}

// laneRig is one Lane over the fakes, run inside the test's bubble. Its
// work records each leadership's token and runs until its context ends,
// unless work is set.
type laneRig struct {
	t     *testing.T
	lock  *fakeLock
	renew *fakeRenewer
	lane  *Lane
	logs  *tail.Buffer

	mu       sync.Mutex
	tokens   []int64 // the tokens the work started with
	causes   []error // BeforeRelease's causes
	work     func(ctx context.Context, lease Lease) error
	releases []int64 // BeforeRelease's tokens

	cancel context.CancelFunc
	done   chan error
}

// newLaneRig builds the lane; edit changes its config. Call it inside a
// bubble, then start.
func newLaneRig(t *testing.T, edit ...func(*laneRig, *Config)) *laneRig {
	t.Helper()
	r := &laneRig{t: t, lock: &fakeLock{}, renew: &fakeRenewer{}, logs: &tail.Buffer{}, done: make(chan error, 1)}
	cfg := Config{
		Lock: r.lock, Renewer: r.renew, WorkerID: "w", RetryInterval: retryInterval,
		Work: func(ctx context.Context, lease Lease) error {
			r.mu.Lock()
			r.tokens = append(r.tokens, lease.Token())
			work := r.work
			r.mu.Unlock()
			if work != nil {
				return work(ctx, lease)
			}
			<-ctx.Done()
			return nil
		},
		BeforeRelease: func(_ context.Context, token int64, cause error) {
			r.mu.Lock()
			r.releases, r.causes = append(r.releases, token), append(r.causes, cause)
			r.mu.Unlock()
		},
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(r, &cfg)
	}
	var err error
	if r.lane, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

// start runs the lane and tells it to contend; the test's end stops it.
func (r *laneRig) start() {
	ctx, cancel := context.WithCancel(r.t.Context())
	r.cancel = cancel
	go func() { r.done <- r.lane.Run(ctx) }()
	r.t.Cleanup(func() {
		cancel()
		if err := <-r.done; err != nil {
			r.t.Errorf("Run: %v", err)
		}
	})
	r.lane.Contend(true)
	synctest.Wait()
}

func (r *laneRig) snap() *Snapshot {
	synctest.Wait()
	return r.lane.Snapshot()
}

func (r *laneRig) wantState(want machine.State) {
	r.t.Helper()
	if got := r.snap().State; got != want {
		r.t.Fatalf("state %v, want %v\n%s", got, want, r.logs)
	}
}

func (r *laneRig) started() []int64 {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tokens)
}

func (r *laneRig) beforeRelease() ([]int64, []error) {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.releases), slices.Clone(r.causes)
}

// infoLines are the INFO lines of the log since mark (a length of it).
func (r *laneRig) infoLines(mark int) []string {
	var out []string
	for line := range strings.SplitSeq(r.logs.String()[mark:], "\n") {
		if strings.Contains(line, " level=INFO ") {
			out = append(out, line)
		}
	}
	return out
}

// gap waits on the bubble's clock for the lock's next acquire and says
// how long that took.
func (r *laneRig) gap() time.Duration {
	r.t.Helper()
	synctest.Wait()
	n, _, _ := r.lock.counts()
	start := time.Now()
	for m := n; m == n; m, _, _ = r.lock.counts() {
		if time.Since(start) > time.Hour {
			r.t.Fatalf("no attempt within an hour\n%s", r.logs)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// failWith makes every acquire fail with err; nil grants again.
func (r *laneRig) failWith(err error) {
	if err == nil {
		r.lock.set(nil)
		return
	}
	r.lock.set(func(context.Context, int64) (*redislock.Lease, error) { return nil, err })
}
