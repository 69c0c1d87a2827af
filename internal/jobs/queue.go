package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config configures a Queue.
type Config struct {
	// Client is the Redis that holds the queue and the epoch key. Required.
	Client redis.Cmdable
	// Prefix starts every key of the queue. Default "lockworker:jobs".
	Prefix string
	// EpochKey is the lock's fencing epoch counter (Stats reads it).
	// Required, and not under Prefix.
	EpochKey string
	// FenceKey is the store's fence: a fenced write (claim, commit,
	// dead-letter) whose token is below it is rejected, and an accepted one
	// raises it to its token, so it holds the highest token seen (also
	// raised by the lock, e.g. by an operator's epoch raise). Pass the
	// lock's (redislock's (*Locker).FenceKey: with one lock node the epoch
	// itself). Default EpochKey + ":fence", the Redlock fence.
	FenceKey string
	// Now stamps enqueue, commit and failure times. Default time.Now.
	Now func() time.Time
	// ShardedNotices publishes enqueue notices with SPUBLISH (Redis
	// Cluster's sharded pub/sub; the channel shares Prefix's hash tag)
	// instead of PUBLISH. Default false.
	ShardedNotices bool
}

// Queue is the serial job queue as producers and operators see it:
// Enqueue, Stats, DeadLetters and Requeue, safe from any replica and any
// goroutine, none needing leadership. The leader processes it with a
// Worker.
type Queue struct {
	cfg Config

	// keys, see doc.go
	fence,
	stream, position, attempts, counters, last, dead, paused, claimed string
	enqueued string // pub/sub channel
}

// New validates cfg, fills in defaults and returns a Queue.
func New(cfg Config) (*Queue, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jobs: "+format, args...)) }
	if cfg.Client == nil {
		bad("Client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "lockworker:jobs"
	}
	if strings.TrimSpace(cfg.EpochKey) == "" {
		bad("EpochKey is required (the lock's fencing epoch key)")
	} else if cfg.EpochKey == cfg.Prefix || strings.HasPrefix(cfg.EpochKey, cfg.Prefix+":") {
		bad("EpochKey %q must not lie under Prefix %q", cfg.EpochKey, cfg.Prefix)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FenceKey == "" {
		cfg.FenceKey = cfg.EpochKey + ":fence"
	}
	p := cfg.Prefix
	return &Queue{
		cfg:      cfg,
		fence:    cfg.FenceKey,
		stream:   p + ":stream",
		position: p + ":position",
		attempts: p + ":attempts",
		counters: p + ":counters",
		last:     p + ":last",
		dead:     p + ":dead",
		paused:   p + ":paused",
		claimed:  p + ":claimed",
		enqueued: p + ":enqueued",
	}, nil
}

func (q *Queue) deadRecord(id string) string { return q.dead + ":" + id }

func (q *Queue) nowMillis() string { return strconv.FormatInt(q.cfg.Now().UnixMilli(), 10) }

func millisTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
