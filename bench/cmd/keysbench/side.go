package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/config"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
)

// fastTimings settle a fleet in seconds (the handover benchmark's); the
// outage and idle fleets run with the defaults instead.
var fastTimings = []string{"LOCK_TTL=2s", "RENEW_INTERVAL=500ms", "RETRY_INTERVAL=1s"}

// side is one fleet of one daemon binary sharing a LOCK_KEY on one Redis.
type side struct {
	label string // for the table: "pre-keys", "JOB_CONCURRENCY=16"
	f     *fleet.Fleet
	bin   string
	env   []string
	parts int
	keys  keyspace.Base
	live  []*fleet.Process
}

// newSide describes a fleet of bin with parts partitions under lockKey on
// r; env comes on top of the Redis URL, the key and the count.
func newSide(f *fleet.Fleet, label, bin string, r *fleet.Redis, lockKey string, parts int, env ...string) *side {
	base := []string{"REDIS_URLS=" + r.URL(), "LOCK_KEY=" + lockKey, "PARTITIONS=" + strconv.Itoa(parts), "LOG_LEVEL=warn"}
	return &side{label: label, f: f, bin: bin, env: append(base, env...), parts: parts, keys: keyspace.MustNew(lockKey)}
}

// start starts n replicas (waitBalanced waits for them).
func (s *side) start(n int) error {
	for range n {
		name := fmt.Sprintf("%s-%d", s.keys.Key(), len(s.live)+1)
		p, err := s.f.Start(fleet.Spec{Name: name, Path: s.bin, Env: append(slices.Clone(s.env), "WORKER_ID="+name)})
		if err != nil {
			return err
		}
		s.live = append(s.live, p)
	}
	return nil
}

// waitBalanced polls /status until every partition has one owner among
// the live replicas and their shares differ by at most one.
func (s *side) waitBalanced(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var all []int
		lo, hi := s.parts, 0
		var err error
		for _, p := range s.live {
			st, e := p.Status(ctx)
			if e != nil {
				err = e
				break
			}
			n := len(st.Leads)
			if s.parts == 1 && st.Leader {
				all, n = append(all, 0), 1
			}
			for _, l := range st.Leads {
				if s.parts > 1 {
					all = append(all, l.Partition)
				}
			}
			lo, hi = min(lo, n), max(hi, n)
		}
		slices.Sort(all)
		if err == nil && len(all) == s.parts && len(slices.Compact(all)) == s.parts && (s.parts == 1 || hi-lo <= 1) {
			return nil
		}
		if time.Now().After(deadline) {
			var last []string
			for _, p := range s.live {
				last = append(last, p.Name+":\n"+p.LastLines(5))
			}
			return fmt.Errorf("%s: %d partitions not shared by %d replicas within %s (last error %v):\n%s",
				s.label, s.parts, len(s.live), limit, err, strings.Join(last, "\n"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startAll starts n replicas of every side at once, then waits until each
// is balanced (a joiner takes its share after two registry periods: the
// sides wait for theirs together).
func startAll(ctx context.Context, n int, sides ...*side) error {
	for _, s := range sides {
		if err := s.start(n); err != nil {
			return err
		}
	}
	for _, s := range sides {
		if err := s.waitBalanced(ctx, 2*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// item is one job as the bench enqueues it: its key ("" for none) and its
// rank within the key, which the job server checks the order by.
type item struct {
	Key  string `json:"key,omitempty"`
	Rank int    `json:"rank"`
}

// keyedItems is n jobs over keys keys named prefix<i>, round robin.
func keyedItems(n, keys int, prefix string) []item {
	items := make([]item, n)
	for i := range items {
		items[i] = item{Key: prefix + strconv.Itoa(i%keys), Rank: i / keys}
	}
	return items
}

// enqueue adds items with the side's own `lockworker enqueue --lines`, in
// order, at most jobs.MaxBatch per call (the CLI's limit, as it was).
func (s *side) enqueue(ctx context.Context, items []item) error {
	keyed := slices.ContainsFunc(items, func(it item) bool { return it.Key != "" })
	for i := 0; i < len(items); i += jobs.MaxBatch {
		var in bytes.Buffer
		for _, it := range items[i:min(i+jobs.MaxBatch, len(items))] {
			b, _ := json.Marshal(it)
			in.Write(append(b, '\n'))
		}
		args := []string{"enqueue", "--lines"}
		if keyed {
			args = append(args, "--key-field", "key")
		}
		cmd := exec.CommandContext(ctx, s.bin, args...)
		cmd.Env = s.env
		cmd.Stdin = &in
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: lockworker enqueue: %w: %s", s.label, err, stderr.String())
		}
	}
	return nil
}

// pause sets (or lifts) every partition's pause flag at once, as `lockworker
// pause` and `resume` do in both daemons: the flag, and on resume a notice
// on the partition's enqueued channel that wakes an idle leader.
func (s *side) pause(ctx context.Context, c *redis.Client, on bool) error {
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range s.parts {
			l := s.keys.Partition(i, s.parts)
			if on {
				p.Set(ctx, l.Paused(), time.Now().UnixMilli(), 0)
			} else {
				p.Del(ctx, l.Paused())
				p.Publish(ctx, l.EnqueuedChannel(), "resume")
			}
		}
		return nil
	})
	return err
}

// committed sums the partitions' committed counters, in one pipeline.
func (s *side) committed(ctx context.Context, c *redis.Client) (int64, error) {
	cmds := make([]*redis.StringCmd, s.parts)
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range s.parts {
			cmds[i] = p.HGet(ctx, s.keys.Partition(i, s.parts).Counters(), "committed")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	var sum int64
	for _, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// waitCommitted polls the committed counters every interval until they
// reach want, and returns when they were first seen there.
func (s *side) waitCommitted(ctx context.Context, c *redis.Client, want int64, interval, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		n, err := s.committed(ctx, c)
		now := time.Now()
		if err == nil && n >= want {
			return now, nil
		}
		if now.After(deadline) {
			return time.Time{}, fmt.Errorf("%s: %d of %d jobs committed after %s (last error %v)", s.label, n, want, limit, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// timed is one drain of a queue filled beforehand.
type timed struct {
	took time.Duration
	jobs int
	cpu  cpuUse // from the resume to the last commit
}

// cores is how many cores the run kept busy, on average.
func (t timed) cores() float64 { return t.cpu.total().Seconds() / t.took.Seconds() }

// cpuPerJob is the CPU time the run used per job, in µs.
func (t timed) cpuPerJob() float64 { return float64(t.cpu.total().Microseconds()) / float64(t.jobs) }

func (t timed) rate() float64 { return float64(t.jobs) / t.took.Seconds() }

// drain pauses every partition, enqueues items, and times the fleet from
// the resume until count more jobs are committed (count: len(items) when
// 0), polling the committed counters every interval.
func (s *side) drain(ctx context.Context, c *redis.Client, items []item, count int, interval, limit time.Duration) (timed, error) {
	if count == 0 {
		count = len(items)
	}
	base, err := s.committed(ctx, c)
	if err != nil {
		return timed{}, err
	}
	if err := s.pause(ctx, c, true); err != nil {
		return timed{}, err
	}
	if err := s.enqueue(ctx, items); err != nil {
		return timed{}, err
	}
	// A pause the daemon did not honour would time the tail of the run
	// only.
	if n, err := s.committed(ctx, c); err != nil || n != base {
		return timed{}, fmt.Errorf("%s: %d jobs committed while paused (error %v)", s.label, n-base, err)
	}
	cpu0, err := readCPU(ctx, s, c)
	if err != nil {
		return timed{}, err
	}
	start := time.Now()
	if err := s.pause(ctx, c, false); err != nil {
		return timed{}, err
	}
	end, err := s.waitCommitted(ctx, c, base+int64(count), interval, limit)
	if err != nil {
		return timed{}, err
	}
	cpu1, err := readCPU(ctx, s, c)
	if err != nil {
		return timed{}, err
	}
	return timed{took: end.Sub(start), jobs: count, cpu: cpu1.minus(cpu0)}, nil
}

// openBackend is the bench's own view of a new fleet's queues, as `lockworker
// enqueue`, `parked` and `skip` have it: the backend on the same
// configuration.
func openBackend(ctx context.Context, s *side) (*backend.Backend, error) {
	vars := map[string]string{}
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		return nil, err
	}
	b, err := backend.Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := b.CheckPartitions(ctx, cfg.RedisNodeTimeout, nil); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// warmUp drains a tenth of items (at least one) through each side,
// unmeasured: a fleet's first jobs pay for its connections, scripts
// loaded and pages touched, which a measured run should not.
func warmUp(ctx context.Context, c *redis.Client, items []item, sides ...*side) error {
	part := items[:max(len(items)/10, 1)]
	for _, s := range sides {
		if _, err := s.drain(ctx, c, part, 0, 10*time.Millisecond, 5*time.Minute); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}
