package roster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/notice"
)

// Config configures a Roster.
type Config struct {
	// Client is the Redis that holds the registry (the first node).
	// Required.
	Client redis.Cmdable
	// Keys names the registry's keys and channel (package keyspace).
	// Required.
	Keys keyspace.Base
	// TTL is how long a record lives without a refresh. Required, at
	// least a millisecond.
	TTL time.Duration
	// Now stamps expiries and UpdatedAt. Default time.Now.
	Now func() time.Time
	// ShardedNotices publishes on the fleet channel with SPUBLISH (Redis
	// Cluster), as its listeners subscribe.
	ShardedNotices bool
}

// Roster reads and writes the registry. Safe for concurrent use.
type Roster struct {
	cfg Config
}

// New validates cfg and returns a Roster.
func New(cfg Config) (*Roster, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("roster: Client is required"))
	}
	if cfg.Keys.IsZero() {
		errs = append(errs, errors.New("roster: Keys is required"))
	}
	if cfg.TTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("roster: TTL must be at least 1ms, got %s", cfg.TTL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Roster{cfg: cfg}, nil
}

// TTL is how long a record lives without a refresh.
func (r *Roster) TTL() time.Duration { return r.cfg.TTL }

// Put writes rec (UpdatedAt set here) with the TTL, in one round trip.
// With prune, index entries whose records expired a TTL ago or more are
// dropped too (one replica, the leader, does it); with announce, a notice
// goes out on the fleet channel.
func (r *Roster) Put(ctx context.Context, rec Record, prune, announce bool) error {
	if rec.WorkerID == "" {
		return errors.New("roster: a record needs a WorkerID")
	}
	now := r.cfg.Now()
	rec.UpdatedAt = now
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("roster: %w", err)
	}
	expiry := float64(now.Add(r.cfg.TTL).UnixMilli())
	_, err = r.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.cfg.Keys.Replica(rec.WorkerID), body, r.cfg.TTL)
		p.ZAdd(ctx, r.cfg.Keys.Replicas(), redis.Z{Score: expiry, Member: rec.WorkerID})
		if prune {
			p.ZRemRangeByScore(ctx, r.cfg.Keys.Replicas(), "-inf", strconv.FormatInt(now.Add(-r.cfg.TTL).UnixMilli(), 10))
		}
		if announce {
			notice.Publish(ctx, p, r.cfg.ShardedNotices, r.cfg.Keys.FleetChannel(), rec.WorkerID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("roster: put %s: %w", rec.WorkerID, err)
	}
	return nil
}

// Claim writes rec, as Put does (without pruning or a notice), unless a
// record of the same WorkerID is live: then it writes nothing and
// returns that record with claimed false (a record it cannot decode comes
// back with only its WorkerID). One round trip: the record's SET NX GET
// with the index's ZADD, so of two replicas that claim one name at once,
// one gets it.
func (r *Roster) Claim(ctx context.Context, rec Record) (other Record, claimed bool, err error) {
	if rec.WorkerID == "" {
		return Record{}, false, errors.New("roster: a record needs a WorkerID")
	}
	now := r.cfg.Now()
	rec.UpdatedAt = now
	body, err := json.Marshal(rec)
	if err != nil {
		return Record{}, false, fmt.Errorf("roster: %w", err)
	}
	var set *redis.StatusCmd
	_, err = r.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetArgs(ctx, r.cfg.Keys.Replica(rec.WorkerID), body, redis.SetArgs{Mode: "NX", Get: true, TTL: r.cfg.TTL})
		// When the name is taken this refreshes the other's index entry,
		// which names the same worker: harmless.
		p.ZAdd(ctx, r.cfg.Keys.Replicas(), redis.Z{Score: float64(now.Add(r.cfg.TTL).UnixMilli()), Member: rec.WorkerID})
		return nil
	})
	prev, serr := set.Result()
	switch {
	case errors.Is(serr, redis.Nil):
		return Record{}, true, nil
	case err != nil:
		return Record{}, false, fmt.Errorf("roster: claim %s: %w", rec.WorkerID, err)
	}
	if json.Unmarshal([]byte(prev), &other) != nil || other.WorkerID != rec.WorkerID {
		other = Record{WorkerID: rec.WorkerID}
	}
	return other, false, nil
}

// Remove deletes a replica's record and announces it, in one round trip.
func (r *Roster) Remove(ctx context.Context, workerID string) error {
	_, err := r.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.cfg.Keys.Replica(workerID))
		p.ZRem(ctx, r.cfg.Keys.Replicas(), workerID)
		notice.Publish(ctx, p, r.cfg.ShardedNotices, r.cfg.Keys.FleetChannel(), workerID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("roster: remove %s: %w", workerID, err)
	}
	return nil
}

// List returns the live replicas' records, ordered by worker ID. A record
// that cannot be decoded is skipped (a newer or older writer's format).
func (r *Roster) List(ctx context.Context) ([]Record, error) {
	ids, err := r.cfg.Client.ZRange(ctx, r.cfg.Keys.Replicas(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("roster: list: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = r.cfg.Keys.Replica(id)
	}
	vals, err := r.cfg.Client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("roster: list: %w", err)
	}
	out := make([]Record, 0, len(vals))
	for _, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // expired: the replica is gone
		}
		var rec Record
		if json.Unmarshal([]byte(s), &rec) == nil && rec.WorkerID != "" {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.WorkerID, b.WorkerID) })
	return out, nil
}
