package jobs

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/replicas"
)

// Config configures a Queue.
type Config struct {
	// Client is the Redis that holds the queue and the epoch key. Required.
	Client redis.Cmdable
	// Keys names the queue's keys and channel, and the lock's fencing
	// epoch counter (Stats reads it): the keyspace of the lease whose
	// holder works on this queue. Required.
	Keys keyspace.Lease
	// FenceKey is the store's fence: a fenced write (claim, commit,
	// dead-letter) whose token is below it is rejected, and an accepted one
	// raises it to its token, so it holds the highest token seen (also
	// raised by the lock, e.g. by an operator's epoch raise). Pass the
	// lock's (redislock's (*Locker).FenceKey: with one lock node the epoch
	// itself). Default Keys.Fence(), the Redlock fence.
	FenceKey string
	// Now stamps enqueue, commit and failure times. Default time.Now.
	Now func() time.Time
	// Partition is the partition whose queue this is (Job.Partition, for
	// the handlers). Default 0.
	Partition int
	// Partitions is the fleet's partition count (PARTITIONS). With one,
	// every keyless job is in one group, the serial queue: keyless jobs
	// run one at a time in enqueue order. With more, a keyless job is a
	// group of its own. Default 1.
	Partitions int
	// ShardedNotices publishes enqueue notices with SPUBLISH (Redis
	// Cluster's sharded pub/sub; the channel shares the keys' hash tag)
	// instead of PUBLISH. Default false.
	ShardedNotices bool
	// MinReplicas: an enqueue is acknowledged (Enqueue returns its ID)
	// only once every online replica of the queue's master, and at least
	// MinReplicas, has it (WAIT; a bulk enqueue waits once). Above 0, a
	// claimed job also runs only once its step is so acknowledged.
	// Default 0: only the online replicas are waited for, none when there
	// are none, and steps never wait. Negative: never wait.
	MinReplicas int
	// ReplicaTimeout bounds that WAIT. Default 1s.
	ReplicaTimeout time.Duration
	// ReplicaCounts caches the masters' online replicas; share one with
	// the locks (redislock.Config.ReplicaCounts). Default: the queue's
	// own.
	ReplicaCounts *replicas.Counts
	// IdempotencyTTL is how long an idempotency key is kept after its
	// job finished (committed, dead-lettered, skipped), so a retried
	// enqueue within it still answers that job's ID
	// (JOB_IDEMPOTENCY_TTL). Default DefaultIdempotencyTTL; negative is an
	// error.
	IdempotencyTTL time.Duration
}

// DefaultIdempotencyTTL is Config.IdempotencyTTL's default.
const DefaultIdempotencyTTL = 24 * time.Hour

// Queue is one partition's job queue as producers and operators see it:
// Enqueue, Stats, DeadLetters, Requeue, Parked, Retry and Skip, safe from
// any replica and any goroutine, none needing leadership. The leader
// processes it with a Worker.
type Queue struct {
	cfg Config

	// The keys (package keyspace's layout), named once here: a step
	// sends most of them.
	fence, epoch,
	ready, inflight, parked, attempts, stale, counters, last, dead, paused,
	delayed, schedules, schedNext, schedLast string
	groups, deadPrefix, idemPrefix string // prefixes of the group lists, dead-letter records, idempotency keys
	enqueued                       string // pub/sub channel
	serial                         bool   // keyless jobs share one group (Config.Partitions 1)
	// noticeAfter: notices are sent after the write they announce, not
	// beside it (see notice).
	noticeAfter bool
	acks        *acks // nil: enqueues are not WAITed for
}

// New validates cfg, fills in defaults and returns a Queue.
func New(cfg Config) (*Queue, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jobs: "+format, args...)) }
	if cfg.Client == nil {
		bad("Client is required")
	}
	if cfg.Keys.IsZero() {
		bad("Keys is required (the lease's keyspace)")
	}
	if cfg.Partitions < 0 || cfg.Partitions > 0 && (cfg.Partition < 0 || cfg.Partition >= cfg.Partitions) {
		bad("Partition must be in [0, Partitions), got %d of %d", cfg.Partition, cfg.Partitions)
	}
	if cfg.IdempotencyTTL < 0 {
		bad("IdempotencyTTL must not be negative, got %s", cfg.IdempotencyTTL)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.IdempotencyTTL = cmp.Or(cfg.IdempotencyTTL, DefaultIdempotencyTTL)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	k := cfg.Keys
	if cfg.FenceKey == "" {
		cfg.FenceKey = k.Fence()
	}
	return &Queue{
		cfg:        cfg,
		fence:      cfg.FenceKey,
		epoch:      k.Epoch(),
		ready:      k.Ready(),
		inflight:   k.InFlight(),
		parked:     k.Parked(),
		attempts:   k.Attempts(),
		stale:      k.Stale(),
		counters:   k.Counters(),
		last:       k.Last(),
		dead:       k.Dead(),
		paused:     k.Paused(),
		delayed:    k.Delayed(),
		schedules:  k.Schedules(),
		schedNext:  k.ScheduleNext(),
		schedLast:  k.ScheduleLast(),
		groups:     k.GroupPrefix(),
		deadPrefix: k.DeadLetterPrefix(),
		idemPrefix: k.IdempotencyPrefix(),
		enqueued:   k.EnqueuedChannel(),
		serial:     cfg.Partitions <= 1,
		// A Cluster's classic PUBLISH may go to another node than the
		// queue's: see notice.
		noticeAfter: isCluster(cfg.Client) && !cfg.ShardedNotices,
		acks:        newAcks(cfg),
	}, nil
}

func isCluster(c redis.Cmdable) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

func (q *Queue) deadRecord(id string) string { return q.cfg.Keys.DeadLetter(id) }

// group is the list of the group member.
func (q *Queue) group(m string) string { return q.groups + m }

// member is the group of a job with key and id in this queue.
func (q *Queue) member(key, id string) string { return member(key, id, q.serial) }

func (q *Queue) nowMillis() string { return strconv.FormatInt(q.cfg.Now().UnixMilli(), 10) }

func millisTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
