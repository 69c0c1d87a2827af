package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replica is one Daemon assembled and run in this process.
type replica struct {
	d      *Daemon
	logs   *tail.Buffer
	cancel context.CancelFunc
	done   chan error
}

// load is the configuration of env over fast test timings.
func load(t *testing.T, env ...string) config.Config {
	t.Helper()
	base := []string{"LOCK_TTL=2s", "RENEW_INTERVAL=400ms", "RETRY_INTERVAL=500ms", "SHUTDOWN_TIMEOUT=5s",
		"WORK_DURATION=20ms", "PORT=" + strconv.Itoa(redistest.FreePort(t))}
	cfg, err := config.Load(config.Getenv(append(base, env...)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// start assembles a Daemon from cfg and runs it until the test stops it.
func start(t *testing.T, cfg config.Config) *replica {
	t.Helper()
	logs := &tail.Buffer{}
	d, err := New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("workerId", cfg.WorkerID))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{d: d, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// stop signals the replica and returns what Run returned.
func (r *replica) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return within 10s of the signal\n%s", r.logs)
		return nil
	}
}

// leads is how many lanes of the replica lead.
func (r *replica) leads() int {
	n := 0
	for _, l := range r.d.lanes {
		if l.leader.Snapshot().Leads() {
			n++
		}
	}
	return n
}

// TestAssembleAndShutDown: a replica is assembled from its configuration
// (one lane per partition, one with one partition: the same parts), serves
// HTTP, leads what it should, and on the signal stops every lane (each
// released and idle), the server and every goroutine it started (goleak,
// in TestMain), and Run returns nil.
func TestAssembleAndShutDown(t *testing.T) {
	t.Parallel()
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprint("partitions=", p), func(t *testing.T) {
			s := redistest.Start(t, redistest.Options{})
			cfg := load(t, "REDIS_URLS="+s.URL(), fmt.Sprint("PARTITIONS=", p), "WORKER_ID=w1")
			r := start(t, cfg)
			if len(r.d.lanes) != p {
				t.Fatalf("%d lanes for PARTITIONS=%d", len(r.d.lanes), p)
			}
			poll.Until(t, 10*time.Second, "every lane leads", func() bool { return r.leads() == p })
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", cfg.Port))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if err := r.stop(t); err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			for _, l := range r.d.lanes {
				if s := l.leader.Snapshot(); s.State != machine.Idle || s.Leads() {
					t.Fatalf("lane %d after Run: %v, leads %v", l.n, s.State, s.Leads())
				}
			}
			for n := range p {
				if lock := r.d.be.Keys.Partition(n, p).Lock(); s.Client().Exists(t.Context(), lock).Val() != 0 {
					t.Fatalf("lock %s still held after the shutdown", lock)
				}
			}
			if _, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", cfg.Port)); err == nil {
				t.Fatal("the HTTP server still answers after Run returned")
			}
		})
	}
}

// TestPartitionsRefused: a replica configured with another partition
// count than the fleet's returns a configuration error naming PARTITIONS
// at once; one started while Redis is down runs until Redis answers and
// is refused then.
func TestPartitionsRefused(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	first := start(t, load(t, "REDIS_URLS="+s.URL(), "PARTITIONS=4", "WORKER_ID=w1"))
	poll.Until(t, 10*time.Second, "the first replica leads", func() bool { return first.leads() == 4 })

	r := start(t, load(t, "REDIS_URLS="+s.URL(), "PARTITIONS=2", "WORKER_ID=w2"))
	var ce *config.Error
	select {
	case err := <-r.done:
		r.done <- err
		if !errors.As(err, &ce) || ce.Var != "PARTITIONS" || !strings.Contains(ce.Msg, "runs with 4") {
			t.Fatalf("Run = %v, want a PARTITIONS error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a replica with another partition count kept running")
	}
	if r.leads() != 0 {
		t.Fatal("the refused replica led a partition")
	}
}

// TestRedisDownAtStart: a replica started while Redis is down runs (its
// charts retry), leads once Redis comes up, and stops cleanly.
func TestRedisDownAtStart(t *testing.T) {
	t.Parallel()
	port := redistest.FreePort(t)
	r := start(t, load(t, "REDIS_URLS=redis://127.0.0.1:"+strconv.Itoa(port), "PARTITIONS=2", "WORKER_ID=w1"))
	poll.Until(t, 5*time.Second, "a failed attempt", func() bool {
		return strings.Contains(r.logs.String(), "trigger=ACQUIRE_FAILED")
	})
	if r.d.redisOK() || r.leads() != 0 {
		t.Fatalf("with Redis down: redisOK %v, %d lanes lead", r.d.redisOK(), r.leads())
	}
	redistest.StartOnPort(t, port, redistest.Options{})
	poll.Until(t, 15*time.Second, "both partitions led once Redis is up", func() bool { return r.leads() == 2 })
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestLeavesBeforeReleasing: a partitioned replica on its way out first
// removes its registry record and announces it, so the others contend for
// its partitions, and only then releases them with their notices.
func TestLeavesBeforeReleasing(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.Options{})
	cfg := load(t, "REDIS_URLS="+s.URL(), "PARTITIONS=3", "WORKER_ID=w1")
	r := start(t, cfg)
	poll.Until(t, 10*time.Second, "every lane leads", func() bool { return r.leads() == 3 })
	keys := r.d.be.Keys
	chans := []string{keys.FleetChannel()}
	for n := range 3 {
		chans = append(chans, keys.Partition(n, 3).ReleasedChannel())
	}
	ps := s.Client().Subscribe(t.Context(), chans...)
	defer ps.Close()
	for range chans {
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	var order []string
	for len(order) < 4 {
		m, err := ps.ReceiveMessage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, m.Channel)
	}
	if order[0] != keys.FleetChannel() {
		t.Fatalf("notices in the order %v: the record's removal must come first", order)
	}
}
