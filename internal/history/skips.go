package history

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Skip is an operator's skip of a parked key: the decision that broke
// the key's order at one job, kept beside the leaderships so the history
// says who decided it, when and why.
type Skip struct {
	// ID is the entry's stream ID; At is its time (the Redis server's
	// clock when it was recorded).
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Partition int       `json:"partition"`
	// Key is the parked key ("" for keyless jobs), JobID the job skipped
	// to the dead letters.
	Key   string `json:"key"`
	JobID string `json:"jobId"`
	// By is who skipped it: "lockworker skip (user@host)", "dashboard
	// (address)" or "api (address)".
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// Skipped records s (ID and At are the stream's); call it once the skip
// is done. The stream keeps about MaxLen of them.
func (h *History) Skipped(ctx context.Context, s Skip) error {
	err := h.cfg.Client.XAdd(ctx, &redis.XAddArgs{
		Stream: h.skips, MaxLen: h.cfg.MaxLen, Approx: true,
		Values: []any{"partition", s.Partition, "key", s.Key, "job", s.JobID, "by", s.By, "reason", s.Reason},
	}).Err()
	if err != nil {
		return fmt.Errorf("history: record the skip of job %s: %w", s.JobID, err)
	}
	return nil
}

// Skips returns up to n skips, newest first; n <= 0 means all.
func (h *History) Skips(ctx context.Context, n int64) ([]Skip, error) {
	var msgs []redis.XMessage
	var err error
	if n > 0 {
		msgs, err = h.cfg.Client.XRevRangeN(ctx, h.skips, "+", "-", n).Result()
	} else {
		msgs, err = h.cfg.Client.XRevRange(ctx, h.skips, "+", "-").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("history: skips: %w", err)
	}
	out := make([]Skip, 0, len(msgs))
	for _, m := range msgs {
		s := func(k string) string { v, _ := m.Values[k].(string); return v }
		p, _ := strconv.Atoi(s("partition"))
		at, err := idTime(m.ID)
		if err != nil {
			return nil, fmt.Errorf("history: skips: %w", err)
		}
		out = append(out, Skip{ID: m.ID, At: at, Partition: p, Key: s("key"), JobID: s("job"), By: s("by"), Reason: s("reason")})
	}
	return out, nil
}

// idTime is the time a stream entry ID ("<ms>-<seq>") was made.
func idTime(id string) (time.Time, error) {
	ms, _, ok := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return time.Time{}, errors.New("not a stream ID: " + id)
	}
	return time.UnixMilli(n), nil
}
