package operator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/notice"
	"github.com/lockworker/lockworker/internal/redislock"
)

// ErrNoLeader is StepDown's answer when nobody holds the lock.
var ErrNoLeader = errors.New("operator: no leader holds the lock")

// requestTTL is how long a step-down request stays readable: long enough
// for a leader busy renewing to read it, short enough to leave no litter.
const requestTTL = time.Minute

// Config configures an Operator.
type Config struct {
	// Client is the first Redis node: the request key and the control
	// channel live there. Required.
	Client redis.Cmdable
	// Holder reads who holds the lock (redislock.Locker.Holder). Required.
	Holder func(ctx context.Context) (redislock.Holder, error)
	// Queue is the job queue. Required.
	Queue *jobs.Queue
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
	cfg Config
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
	if cfg.Queue == nil {
		errs = append(errs, errors.New("operator: Queue is required"))
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
	return &Operator{cfg: cfg}, nil
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

// StepDown asks the current leader to step down and waits, until ctx is
// done, for another leadership to hold the lock. It returns ErrNoLeader
// when nobody holds it, and an error when the leader still holds it when
// ctx ends; a release with nobody holding the lock yet is a success with
// To.Held false.
func (o *Operator) StepDown(ctx context.Context) (Handover, error) {
	from, err := o.cfg.Holder(ctx)
	if err != nil {
		return Handover{}, fmt.Errorf("operator: step down: read the lock: %w", err)
	}
	if !from.Held {
		return Handover{}, ErrNoLeader
	}
	start := time.Now()
	h := Handover{From: from}
	sent := time.Time{}
	for {
		if time.Since(sent) >= o.cfg.Resend {
			if err := o.request(ctx, from.Token); err != nil {
				return h, err
			}
			sent = time.Now()
		}
		if !backoff.Sleep(ctx, o.cfg.Poll) {
			break
		}
		now, err := o.cfg.Holder(ctx)
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

// request writes the step-down request for token and announces it. No
// listener at all is an error: nobody would ever read it.
func (o *Operator) request(ctx context.Context, token int64) error {
	var pub *redis.IntCmd
	_, err := o.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, o.cfg.Keys.Lease().StepDown(), token, requestTTL)
		pub = notice.Publish(ctx, p, o.cfg.ShardedNotices, o.cfg.Keys.ControlChannel(), "stepdown")
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

// Requested returns the token an operator asked to step down, 0 when none.
func (o *Operator) Requested(ctx context.Context) (int64, error) {
	v, err := o.cfg.Client.Get(ctx, o.cfg.Keys.Lease().StepDown()).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("operator: read the step-down request: %w", err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// Pause stops the leader from taking new jobs, fleet-wide.
func (o *Operator) Pause(ctx context.Context) error {
	if err := o.cfg.Queue.Pause(ctx); err != nil {
		return err
	}
	o.announce(ctx, "pause")
	return nil
}

// Resume undoes Pause.
func (o *Operator) Resume(ctx context.Context) error {
	if err := o.cfg.Queue.Resume(ctx); err != nil {
		return err
	}
	o.announce(ctx, "resume")
	return nil
}

// Requeue moves the dead letter id back to the queue as a new job and
// returns its ID; jobs.ErrNotFound when id is no dead letter.
func (o *Operator) Requeue(ctx context.Context, id string) (string, error) {
	newID, err := o.cfg.Queue.Requeue(ctx, id)
	if err != nil {
		return "", err
	}
	o.announce(ctx, "requeue")
	return newID, nil
}

// announce tells listeners something changed; the change itself is done,
// so a lost announcement only delays what they show.
func (o *Operator) announce(ctx context.Context, what string) {
	_ = notice.Publish(ctx, o.cfg.Client, o.cfg.ShardedNotices, o.cfg.Keys.ControlChannel(), what).Err()
}
