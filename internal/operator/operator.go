package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/history"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/redislock"
)

// ErrNoLeader is StepDown's answer when nobody holds the lock.
var ErrNoLeader = errors.New("operator: no leader holds the lock")

// ErrEnded is StepDown's answer when the leadership it was asked to end
// (by its token) has already ended: nothing is asked of the leader that
// followed it.
var ErrEnded = errors.New("operator: that leadership has already ended")

// requestTTL is how long a step-down request stays readable: long enough
// for a leader busy renewing to read it, short enough to leave no litter.
const requestTTL = time.Minute

// Config configures an Operator.
type Config struct {
	// Client is the first Redis node: the request key and the control
	// channel live there. Required.
	Client redis.Cmdable
	// Holder reads who holds partition p's lock (redislock.Locker.Holder
	// of that partition; p is 0 without partitions). Required.
	Holder func(ctx context.Context, p int) (redislock.Holder, error)
	// Queues are the partitions' job queues, by partition (one without
	// partitions). Required.
	Queues []*jobs.Queue
	// Keys names the step-down request and the control channel (package
	// keyspace). Required.
	Keys keyspace.Base
	// Poll is how often StepDown reads the holder while it waits.
	// Default 20ms.
	Poll time.Duration
	// Resend is how often StepDown announces its request again while
	// the leader has not let go. Default 500ms.
	Resend time.Duration
	// ShardedNotices publishes on the control channel with SPUBLISH (Redis
	// Cluster), as its listeners subscribe.
	ShardedNotices bool
}

// Operator carries out operators' requests. Safe for concurrent use.
type Operator struct {
	cfg     Config
	router  *jobs.Router     // finds a key's partition for Retry and Skip
	history *history.History // records the skips
}

// New validates cfg and returns an Operator.
func New(cfg Config) (*Operator, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("operator: Client is required"))
	}
	if cfg.Holder == nil {
		errs = append(errs, errors.New("operator: Holder is required"))
	}
	if len(cfg.Queues) == 0 || slices.Contains(cfg.Queues, nil) {
		errs = append(errs, errors.New("operator: Queues are required, one per partition"))
	}
	if cfg.Keys.IsZero() {
		errs = append(errs, errors.New("operator: Keys is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	if cfg.Resend <= 0 {
		cfg.Resend = 500 * time.Millisecond
	}
	r, err := jobs.NewRouter(cfg.Queues, cfg.Client, false)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	h, err := history.New(history.Config{Client: cfg.Client, Keys: cfg.Keys, Partitions: len(cfg.Queues)})
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return &Operator{cfg: cfg, router: r, history: h}, nil
}

// Handover is what a step-down did.
type Handover struct {
	// From is the leadership asked to step down.
	From redislock.Holder
	// To is the leadership that followed; To.Held is false when the lock
	// was released but nobody had taken it yet when StepDown returned.
	To redislock.Holder
	// Took is the time from the request to To (or to the release).
	Took time.Duration
}

// StepDown asks the leadership of partition p (0 without partitions)
// whose fencing token is token to step down, and waits, until ctx is
// done, for another leadership to hold its lock. Token 0 means whichever
// leadership holds the lock when StepDown reads it. It returns
// ErrNoLeader when nobody holds the lock, an error wrapping ErrEnded when
// another leadership than token's holds it (a second request for a
// leadership that already stepped down must not end the next one), and
// an error when the leader still holds it when ctx ends; a release with
// nobody holding the lock yet is a success with To.Held false.
func (o *Operator) StepDown(ctx context.Context, p int, token int64) (Handover, error) {
	from, err := o.leadership(ctx, p, token)
	if err != nil {
		return Handover{}, err
	}
	start := time.Now()
	h := Handover{From: from}
	sent := time.Time{}
	for {
		if time.Since(sent) >= o.cfg.Resend {
			if err := o.request(ctx, p, from.Token); err != nil {
				return h, err
			}
			sent = time.Now()
		}
		if !backoff.Sleep(ctx, o.cfg.Poll) {
			break
		}
		now, err := o.cfg.Holder(ctx, p)
		if err != nil {
			continue // read again; the deadline bounds it
		}
		gone := !now.Held || now.Token != from.Token
		if gone {
			h.Took = time.Since(start)
		}
		if now.Held && now.Token != from.Token {
			h.To = now
			return h, nil
		}
	}
	if h.Took > 0 {
		return h, nil // released; nobody had taken over yet
	}
	return h, fmt.Errorf("operator: %s (token %d) did not step down within %s", from.WorkerID, from.Token, time.Since(start).Round(time.Millisecond))
}

// leadership is the leadership of partition p a step-down for token
// means (token 0: whichever holds the lock), or why there is none.
func (o *Operator) leadership(ctx context.Context, p int, token int64) (redislock.Holder, error) {
	if err := o.check(p); err != nil {
		return redislock.Holder{}, err
	}
	if token < 0 {
		return redislock.Holder{}, fmt.Errorf("operator: step down: token %d: a fencing token is positive", token)
	}
	from, err := o.cfg.Holder(ctx, p)
	switch {
	case err != nil:
		return redislock.Holder{}, fmt.Errorf("operator: step down: read the lock: %w", err)
	case !from.Held && token == 0:
		return redislock.Holder{}, ErrNoLeader
	case !from.Held:
		return redislock.Holder{}, fmt.Errorf("%w: token %d; nobody leads now", ErrEnded, token)
	case token != 0 && from.Token != token:
		return redislock.Holder{}, fmt.Errorf("%w: token %d; %s leads now, with token %d, and was asked nothing",
			ErrEnded, token, from.WorkerID, from.Token)
	}
	return from, nil
}

// request writes the step-down request for partition p's token and
// announces it. No listener at all is an error: nobody would ever read it.
func (o *Operator) request(ctx context.Context, p int, token int64) error {
	var pub *redis.IntCmd
	_, err := o.cfg.Client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, o.lease(p).StepDown(), token, requestTTL)
		pub = notice.Publish(ctx, pipe, o.cfg.ShardedNotices, o.cfg.Keys.ControlChannel(), "stepdown")
		return nil
	})
	if err != nil {
		return fmt.Errorf("operator: step down: %w", err)
	}
	if pub.Val() == 0 {
		return fmt.Errorf("operator: step down: no replica listens on %s", o.cfg.Keys.ControlChannel())
	}
	return nil
}

// Requested returns the token of partition p an operator asked to step
// down, 0 when none.
func (o *Operator) Requested(ctx context.Context, p int) (int64, error) {
	if err := o.check(p); err != nil {
		return 0, err
	}
	v, err := o.cfg.Client.Get(ctx, o.lease(p).StepDown()).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("operator: read the step-down request: %w", err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// Partitions is the fleet's partition count.
func (o *Operator) Partitions() int { return len(o.cfg.Queues) }

// AllPartitions stands for every partition in Pause and Resume.
const AllPartitions = -1

// Pause stops the leader of partition p from taking new jobs, or of
// every partition for AllPartitions.
func (o *Operator) Pause(ctx context.Context, p int) error {
	if err := o.each(p, func(q *jobs.Queue) error { return q.Pause(ctx) }); err != nil {
		return err
	}
	o.announce(ctx, "pause")
	return nil
}

// Resume undoes Pause.
func (o *Operator) Resume(ctx context.Context, p int) error {
	if err := o.each(p, func(q *jobs.Queue) error { return q.Resume(ctx) }); err != nil {
		return err
	}
	o.announce(ctx, "resume")
	return nil
}

// Requeue moves the dead letter id back to the head of its key in its
// partition's queue (jobs.Queue.Requeue) as a new job and returns its ID;
// jobs.ErrNotFound when id is no dead letter of any partition.
func (o *Operator) Requeue(ctx context.Context, id string) (string, error) {
	return o.requeue(ctx, id, (*jobs.Queue).Requeue)
}

// RequeueTail is Requeue to the tail of the key (jobs.Queue.RequeueTail),
// after the jobs enqueued since: the key's order does not hold for it.
func (o *Operator) RequeueTail(ctx context.Context, id string) (string, error) {
	return o.requeue(ctx, id, (*jobs.Queue).RequeueTail)
}

func (o *Operator) requeue(ctx context.Context, id string, fn func(*jobs.Queue, context.Context, string) (string, error)) (string, error) {
	var newID string
	var err error
	for _, q := range o.cfg.Queues {
		if newID, err = fn(q, ctx, id); !errors.Is(err, jobs.ErrNotFound) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	o.announce(ctx, "requeue")
	return newID, nil
}

// Parked lists every partition's parked keys, longest parked first.
func (o *Operator) Parked(ctx context.Context) ([]jobs.ParkedKey, error) { return o.router.Parked(ctx) }

// Retry runs the failing job of the parked key ref names again, with
// fresh attempts (jobs.Queue.Retry), and returns its ID;
// jobs.ErrNotParked when no partition has it parked.
func (o *Operator) Retry(ctx context.Context, ref jobs.Ref) (string, error) {
	id, err := o.router.Retry(ctx, ref)
	if err == nil {
		o.announce(ctx, "retry")
	}
	return id, err
}

// ErrNotRecorded is Skip's error when the skip was done but its record
// in the history could not be written: the dead letter still says who
// skipped it and why.
var ErrNotRecorded = errors.New("operator: skipped, but not recorded in the history")

// Skip moves the failing job of the parked key ref names to the dead
// letters, recorded as skipped by by for reason, and releases the key's
// held jobs (jobs.Queue.Skip); it returns the job's ID. The skip is then
// recorded in the history (history.Skipped: who, when, why); when that
// write fails, Skip returns the ID and an error wrapping ErrNotRecorded.
func (o *Operator) Skip(ctx context.Context, ref jobs.Ref, by, reason string) (string, error) {
	rec, err := o.locate(ctx, ref)
	if err != nil {
		return "", err
	}
	id, err := o.router.Skip(ctx, ref, by, reason)
	if err != nil {
		return "", err
	}
	o.announce(ctx, "skip")
	rec.JobID, rec.By, rec.Reason = id, by, reason
	if err := o.history.Skipped(ctx, rec); err != nil {
		return id, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return id, nil
}

// locate is the key and partition of the parked key ref names, for the
// history: a key's partition is its hash's; a job's is read from the
// parked keys (jobs.ErrNotParked when none is parked on it).
func (o *Operator) locate(ctx context.Context, ref jobs.Ref) (history.Skip, error) {
	if ref.Key != "" {
		return history.Skip{Key: ref.Key, Partition: o.router.Partition(ref.Key, "")}, nil
	}
	parked, err := o.router.Parked(ctx)
	if err != nil {
		return history.Skip{}, err
	}
	for _, p := range parked {
		if p.JobID == ref.JobID {
			return history.Skip{Key: p.Key, Partition: p.Partition}, nil
		}
	}
	return history.Skip{}, fmt.Errorf("operator: skip %s: %w", ref, jobs.ErrNotParked)
}

// check refuses a partition the fleet does not have.
func (o *Operator) check(p int) error {
	if p < 0 || p >= len(o.cfg.Queues) {
		return fmt.Errorf("operator: no partition %d: the fleet has %d (0 to %d)", p, len(o.cfg.Queues), len(o.cfg.Queues)-1)
	}
	return nil
}

func (o *Operator) lease(p int) keyspace.Lease { return o.cfg.Keys.Partition(p, len(o.cfg.Queues)) }

// each runs fn on partition p's queue, or on every queue for
// AllPartitions, and joins the errors.
func (o *Operator) each(p int, fn func(*jobs.Queue) error) error {
	if p == AllPartitions {
		var errs []error
		for _, q := range o.cfg.Queues {
			errs = append(errs, fn(q))
		}
		return errors.Join(errs...)
	}
	if err := o.check(p); err != nil {
		return err
	}
	return fn(o.cfg.Queues[p])
}

// announce tells listeners something changed; the change itself is done,
// so a lost announcement only delays what they show.
func (o *Operator) announce(ctx context.Context, what string) {
	_ = notice.Publish(ctx, o.cfg.Client, o.cfg.ShardedNotices, o.cfg.Keys.ControlChannel(), what).Err()
}
