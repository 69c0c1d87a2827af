package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/machine"
	"github.com/lockworker/lockworker/internal/metrics"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/redislock"
)

// parts are what every command builds from the configuration.
type parts struct {
	clients []*redis.Client
	locker  *redislock.Locker
	queue   *jobs.Queue
}

func (p *parts) Close() { closeAll(p.clients) }

func build(cfg config.Config, log *slog.Logger, handler jobs.Handler) (*parts, error) {
	clients, names, err := dialRedis(cfg)
	if err != nil {
		return nil, err
	}
	nodes := make([]redis.Scripter, len(clients))
	for i, c := range clients {
		nodes[i] = c
	}
	locker, err := redislock.New(redislock.Config{
		Nodes:       nodes,
		Epoch:       clients[0],
		NodeNames:   names,
		Key:         cfg.LockKey,
		TTL:         cfg.LockTTL,
		DriftFactor: cfg.ClockDriftFactor,
		NodeTimeout: cfg.RedisNodeTimeout,
	})
	if err != nil {
		closeAll(clients)
		return nil, &exitError{code: 2, err: err}
	}
	if handler == nil {
		handler = jobs.HandlerFunc(func(context.Context, jobs.Job, int64) error {
			return errors.New("this command processes no jobs")
		})
	}
	queue, err := jobs.New(jobs.Config{
		Client:      clients[0],
		Prefix:      cfg.LockKey + ":jobs",
		EpochKey:    redislock.EpochKey(cfg.LockKey),
		Handler:     handler,
		MaxAttempts: cfg.JobMaxAttempts,
		// Enqueue notices wake an idle leader at once; polling is only
		// the fallback for a lost notice.
		PollInterval: idlePoll,
		Logger:       log,
	})
	if err != nil {
		closeAll(clients)
		return nil, &exitError{code: 2, err: err}
	}
	return &parts{clients: clients, locker: locker, queue: queue}, nil
}

// idlePoll is how often an idle leader looks at its queue when no enqueue
// notice comes (jittered to [idlePoll/2, idlePoll)).
const idlePoll = 2 * time.Second

// oneShotTimeout bounds a command-line call (status, enqueue, ...) to Redis.
const oneShotTimeout = 5 * time.Second

// oneShot builds the parts for a command-line call that processes no jobs,
// with a context bounded by oneShotTimeout; done releases both.
func oneShot(ctx context.Context, cfg config.Config) (*parts, context.Context, func(), error) {
	p, err := build(cfg, newLogger(cfg, io.Discard), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, oneShotTimeout)
	return p, ctx, func() { cancel(); p.Close() }, nil
}

func jobHandler(cfg config.Config, log *slog.Logger) jobs.Handler {
	if cfg.JobHandler == "exec" {
		return jobs.NewExecHandler(jobs.ExecConfig{
			Command:  strings.Fields(cfg.JobCommand),
			WorkerID: cfg.WorkerID,
			Logger:   log,
		})
	}
	return jobs.NewLogHandler(jobs.LogConfig{Duration: cfg.WorkDuration, Logger: log})
}

// runDaemon runs one replica until ctx is cancelled (SIGTERM/SIGINT), then
// stops work, releases the lock and returns within SHUTDOWN_TIMEOUT.
func runDaemon(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	log := newLogger(cfg, stdout)
	redis.SetLogger(redisLogger{log: log})
	p, err := build(cfg, log, jobHandler(cfg, log))
	if err != nil {
		return err
	}
	defer p.Close()

	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("PORT %d: %w", cfg.Port, err)
	}

	var m *machine.Machine
	var met *metrics.Metrics
	ld, err := leader.New(leader.Config{
		Lock:          p.locker,
		WorkerID:      cfg.WorkerID,
		Work:          func(ctx context.Context, lease leader.Lease) error { return p.queue.Process(ctx, lease) },
		RetryInterval: cfg.RetryInterval,
		Logger:        log,
		Observe: func(op string, d time.Duration, result string) {
			if op == "acquire" {
				met.ObserveAcquire(d, result)
			} else {
				met.ObserveRenew(d, result)
			}
		},
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	// Stopping work gets at most half the shutdown budget, so the release
	// that follows still has time.
	stopBudget := cfg.ShutdownTimeout / 2
	m, err = machine.New(machine.Config{
		Acquire: ld.Acquire,
		Renew:   ld.Renew,
		Release: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout/2)
			defer cancel()
			return ld.Release(ctx)
		},
		StartWork: ld.StartWork,
		StopWork: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, stopBudget)
			defer cancel()
			return ld.StopWork(ctx)
		},
		RenewInterval: cfg.RenewInterval,
		RetryDelay:    ld.RetryDelay,
		Logger:        log,
		OnTransition: func(from, to machine.State, _ machine.Trigger) {
			met.Transition(from.String(), to.String())
		},
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	met = metrics.New(metrics.Config{
		States: stateNames(),
		Snapshot: func() metrics.Snapshot {
			s := ld.Status()
			return metrics.Snapshot{Leader: s.Leader, Token: s.Token, LeaseLeft: s.LeaseLeft}
		},
		Queue: func(ctx context.Context) (metrics.QueueFigures, error) {
			s, err := boundedStats(ctx, p.queue)
			return metrics.QueueFigures{Pending: s.Pending, Committed: s.Committed, DeadLettered: s.DeadLettered, Epoch: s.Epoch}, err
		},
	})
	met.SetState(machine.Idle.String())

	mode := "single-node"
	if len(p.clients) > 1 {
		mode = fmt.Sprintf("redlock (%d nodes, quorum %d)", len(p.clients), p.locker.Quorum())
	}
	var stopping atomic.Bool
	srv := &http.Server{
		Handler: httpapi.Handler(httpapi.Config{
			Status: func(ctx context.Context) httpapi.Status {
				s := ld.Status()
				st := httpapi.Status{
					WorkerID: cfg.WorkerID, State: m.State().String(), Leader: s.Leader, Token: s.Token,
					LockKey: cfg.LockKey, LeaseLeft: s.LeaseLeft.Milliseconds(), Mode: mode,
					Nodes: len(p.clients), RedisOK: ld.RedisOK(),
				}
				st.Queue = queueStatus(ctx, p.queue)
				return st
			},
			Ready:     func() bool { return !stopping.Load() && ld.RedisOK() },
			Metrics:   met.Handler(),
			Enqueue:   p.queue.Enqueue,
			JobsToken: cfg.JobsToken,
			Logger:    log,
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	log.Info("lockworker starting", "port", cfg.Port, "lockKey", cfg.LockKey, "mode", mode,
		"redis", config.Redacted(cfg.RedisURLs), "lockTtl", cfg.LockTTL.String(),
		"renewInterval", cfg.RenewInterval.String(), "retryInterval", cfg.RetryInterval.String())

	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	g, gctx := errgroup.WithContext(runCtx)
	machineDone := make(chan error, 1)
	g.Go(func() error {
		err := m.Run(ctx)
		machineDone <- err
		cancelRun() // the machine is the daemon: when it ends, everything ends
		return err
	})
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		stopping.Store(true)
		shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	})
	// Notices: release notices from every node wake a waiting follower;
	// enqueue notices from the queue's node wake an idle leader. One
	// subscription per node carries both.
	for i, c := range p.clients {
		handlers := map[string]func(){}
		if cfg.ReleaseNotices {
			handlers[redislock.ReleasedChannel(cfg.LockKey)] = m.NotifyReleased
		}
		if i == 0 {
			handlers[p.queue.EnqueuedChannel()] = p.queue.Notify
		}
		g.Go(func() error {
			notice.Watch(gctx, c, handlers, log)
			return nil
		})
	}

	// A signal starts the clock on the shutdown budget.
	select {
	case <-ctx.Done():
		stopping.Store(true)
		log.Info("signal received: stopping", "shutdownTimeout", cfg.ShutdownTimeout.String())
		select {
		case err := <-machineDone:
			machineDone <- err
		case <-time.After(cfg.ShutdownTimeout):
			return fmt.Errorf("shutdown took longer than SHUTDOWN_TIMEOUT (%s)", cfg.ShutdownTimeout)
		}
	case err := <-machineDone:
		machineDone <- err
	}
	if err := g.Wait(); err != nil {
		return err
	}
	log.Info("lockworker stopped")
	return nil
}

// statusQueueTimeout bounds the queue read behind /status and /metrics, so
// a Redis that is down or slow never makes them (and the probes and scrapes
// built on them) hang.
const statusQueueTimeout = 250 * time.Millisecond

// boundedStats reads the queue's figures within statusQueueTimeout.
func boundedStats(ctx context.Context, q *jobs.Queue) (jobs.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, statusQueueTimeout)
	defer cancel()
	return q.Stats(ctx)
}

func queueStatus(ctx context.Context, q *jobs.Queue) *httpapi.Queue {
	s, err := boundedStats(ctx, q)
	if err != nil {
		return &httpapi.Queue{Error: "unavailable"}
	}
	return &httpapi.Queue{Pending: s.Pending, Committed: s.Committed, DeadLettered: s.DeadLettered, Epoch: s.Epoch}
}

func stateNames() []string {
	var names []string
	for _, s := range machine.States() {
		names = append(names, s.String())
	}
	return names
}
