package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"
)

// ErrStaleToken means a newer leader exists: the epoch is above the token
// this write was fenced with, and nothing was changed.
var ErrStaleToken = errors.New("jobs: stale fencing token")

// ErrLeaseInvalid ends Process when the lease is no longer valid (its
// deadline passed) while the context was still live.
var ErrLeaseInvalid = errors.New("jobs: lease no longer valid")

// ErrNotFound is returned by Requeue for an ID that is not a dead letter.
var ErrNotFound = errors.New("jobs: no such dead letter")

// Config configures a Queue.
type Config struct {
	// Client is the Redis that holds the queue and the epoch key. Required.
	Client redis.Cmdable
	// Prefix starts every key of the queue. Default "lockworker:jobs".
	Prefix string
	// EpochKey is the lock's fencing epoch counter; every commit is fenced
	// against it. Required, and not under Prefix.
	EpochKey string
	// Handler processes jobs. Required.
	Handler Handler
	// MaxAttempts is how many deliveries a job gets before it is
	// dead-lettered. Default 5; negative is an error.
	MaxAttempts int
	// BackoffBase and BackoffMax bound the jittered exponential wait
	// before a failed job is retried (and between tries of a Redis call
	// that failed). Defaults 100ms and 5s; BackoffMax >= BackoffBase.
	BackoffBase, BackoffMax time.Duration
	// PollInterval is how long an idle leader waits before it looks for new
	// jobs again, unless Notify wakes it first. Default 500ms. A busy
	// leader does not wait.
	PollInterval time.Duration
	// Logger receives the queue's logs. Default: discard.
	Logger *slog.Logger
	// Now stamps enqueue, commit and failure times. Default time.Now.
	Now func() time.Time
}

// Queue is the serial job queue. Enqueue, Stats, DeadLetters and Requeue
// are safe from any replica and any goroutine; Process is the leader's.
type Queue struct {
	cfg Config
	log *slog.Logger

	// keys, see doc.go
	stream, position, attempts, counters, last, dead string
	enqueued                                         string // pub/sub channel

	wake chan struct{} // one pending enqueue notice at most
}

// New validates cfg, fills in defaults and returns a Queue.
func New(cfg Config) (*Queue, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jobs: "+format, args...)) }
	if cfg.Client == nil {
		bad("Client is required")
	}
	if cfg.Handler == nil {
		bad("Handler is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "lockworker:jobs"
	}
	if strings.TrimSpace(cfg.EpochKey) == "" {
		bad("EpochKey is required (the lock's fencing epoch key)")
	} else if cfg.EpochKey == cfg.Prefix || strings.HasPrefix(cfg.EpochKey, cfg.Prefix+":") {
		bad("EpochKey %q must not lie under Prefix %q", cfg.EpochKey, cfg.Prefix)
	}
	if cfg.MaxAttempts < 0 {
		bad("MaxAttempts must be at least 1, got %d", cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"BackoffBase", &cfg.BackoffBase, 100 * time.Millisecond},
		{"BackoffMax", &cfg.BackoffMax, 5 * time.Second},
		{"PollInterval", &cfg.PollInterval, 500 * time.Millisecond},
	} {
		if *d.v < 0 {
			bad("%s must not be negative, got %s", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.BackoffBase > 0 && cfg.BackoffMax > 0 && cfg.BackoffMax < cfg.BackoffBase {
		bad("BackoffMax (%s) must not be below BackoffBase (%s)", cfg.BackoffMax, cfg.BackoffBase)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := cfg.Prefix
	return &Queue{
		cfg:      cfg,
		log:      cfg.Logger,
		stream:   p + ":stream",
		position: p + ":position",
		attempts: p + ":attempts",
		counters: p + ":counters",
		last:     p + ":last",
		dead:     p + ":dead",
		enqueued: p + ":enqueued",
		wake:     make(chan struct{}, 1),
	}, nil
}

func (q *Queue) deadRecord(id string) string { return q.dead + ":" + id }

// Enqueue appends a job to the tail of the queue and returns its ULID, and
// publishes the ID on EnqueuedChannel so an idle leader wakes at once.
// Anyone may call it; it needs no leadership. Only the append decides the
// result: a lost notice costs the leader one PollInterval, while reporting
// it as a failure would invite a second enqueue of the same job.
func (q *Queue) Enqueue(ctx context.Context, payload []byte) (string, error) {
	id := ulid.Make().String()
	var add *redis.StringCmd
	_, _ = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{
			Stream: q.stream,
			Values: []any{"id", id, "payload", payload, "enqueued_at", q.nowMillis()},
		})
		p.Publish(ctx, q.enqueued, id)
		return nil
	})
	if err := add.Err(); err != nil {
		return "", fmt.Errorf("jobs: enqueue: %w", err)
	}
	return id, nil
}

// EnqueuedChannel is the pub/sub channel Enqueue publishes new job IDs on.
func (q *Queue) EnqueuedChannel() string { return q.enqueued }

// Notify wakes an idle Process at once instead of at its next poll; wire
// it to EnqueuedChannel (package notice). Safe from any goroutine, never
// blocks; notices coalesce.
func (q *Queue) Notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Stats is a snapshot of the queue.
type Stats struct {
	// Pending counts jobs not yet committed or dead-lettered, the one in
	// flight included.
	Pending int64
	// Committed counts jobs completed since the queue was created.
	Committed int64
	// DeadLettered counts jobs in the dead-letter list now (Requeue
	// removes them).
	DeadLettered int64
	// Epoch is the lock's current fencing epoch (0 before any leader).
	Epoch int64
	// LastCommittedID is the ID of the last completed job, "" if none.
	LastCommittedID string
}

// Stats reads the queue's counters and lengths in one atomic round trip.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	var pending *redis.IntCmd
	var committed, lastID *redis.StringCmd
	var dead *redis.IntCmd
	var epoch *redis.StringCmd
	_, err := q.cfg.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		pending = p.XLen(ctx, q.stream)
		committed = p.HGet(ctx, q.counters, "committed")
		dead = p.ZCard(ctx, q.dead)
		epoch = p.Get(ctx, q.cfg.EpochKey)
		lastID = p.HGet(ctx, q.last, "id")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Stats{}, fmt.Errorf("jobs: stats: %w", err)
	}
	s := Stats{Pending: pending.Val(), DeadLettered: dead.Val(), LastCommittedID: lastID.Val()}
	if s.Committed, err = optInt(committed); err != nil {
		return Stats{}, fmt.Errorf("jobs: stats: committed counter: %w", err)
	}
	if s.Epoch, err = optInt(epoch); err != nil {
		return Stats{}, fmt.Errorf("jobs: stats: epoch key %s: %w", q.cfg.EpochKey, err)
	}
	return s, nil
}

// optInt parses an integer reply that may be nil (0 then).
func optInt(c *redis.StringCmd) (int64, error) {
	if errors.Is(c.Err(), redis.Nil) {
		return 0, nil
	}
	if c.Err() != nil {
		return 0, c.Err()
	}
	return strconv.ParseInt(c.Val(), 10, 64)
}

// DeadLetter is a job that failed MaxAttempts times.
type DeadLetter struct {
	Job
	// Error is the last attempt's error.
	Error string
	// Attempts is how many deliveries the job had.
	Attempts int
	// FailedAt is when it was dead-lettered.
	FailedAt time.Time
	// Token is the fencing token of the leader that dead-lettered it.
	Token int64
}

// DeadLetters returns up to n dead letters, most recent first; n <= 0
// returns all of them.
func (q *Queue) DeadLetters(ctx context.Context, n int64) ([]DeadLetter, error) {
	stop := n - 1
	if n <= 0 {
		stop = -1
	}
	ids, err := q.cfg.Client.ZRevRange(ctx, q.dead, 0, stop).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: dead letters: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = q.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, q.deadRecord(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(ids))
	for _, c := range cmds {
		r := c.Val()
		if len(r) == 0 {
			continue // requeued between the two reads
		}
		attempts, _ := strconv.Atoi(r["attempts"])
		token, _ := strconv.ParseInt(r["token"], 10, 64)
		out = append(out, DeadLetter{
			Job: Job{
				ID:         r["id"],
				Payload:    []byte(r["payload"]),
				Attempt:    attempts,
				EnqueuedAt: millisTime(r["enqueued_at"]),
			},
			Error:    r["error"],
			Attempts: attempts,
			FailedAt: millisTime(r["failed_at"]),
			Token:    token,
		})
	}
	return out, nil
}

// Requeue moves the dead letter id back to the tail of the queue as a new
// job (new ID, attempts from 1) and returns the new ID. It needs no
// leadership. ErrNotFound when id is not a dead letter.
func (q *Queue) Requeue(ctx context.Context, id string) (string, error) {
	newID := ulid.Make().String()
	err := requeueScript.Run(ctx, q.cfg.Client,
		[]string{q.dead, q.deadRecord(id), q.stream},
		id, newID, q.nowMillis()).Err()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("jobs: requeue %s: %w", id, err)
	}
	return newID, nil
}

func (q *Queue) nowMillis() string { return strconv.FormatInt(q.cfg.Now().UnixMilli(), 10) }

func millisTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
