package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/backend"
	"github.com/lockworker/lockworker/internal/fleet"
	"github.com/lockworker/lockworker/internal/jobs"
)

// The keys whose first job always fails: one among the others, its jobs
// taking o.work as theirs do; one alone, its jobs answered at once, to
// time what the skip itself costs.
const (
	poisoned = "poisoned"
	instant  = "poisoned-instant"
)

// poisonRetries make the poisoned job fail for good (and park its key)
// about 1.5 s after it first ran: long enough to retry all through the
// other keys' run, short enough to wait for.
var poisonRetries = []string{"JOB_RETRY_BASE=50ms", "JOB_RETRY_MAX=200ms", "JOB_MAX_ATTEMPTS=10"}

// failFirst fails the first job of key with a 500, every time.
func failFirst(key string) func(item) int {
	return func(it item) int {
		if it.Key == key && it.Rank == 0 {
			return http.StatusInternalServerError
		}
		return 0
	}
}

// measurePoison: o.jobs jobs over o.keys-1 keys, alone and with a key
// whose first job answers 500 every time, followed by o.held jobs of it;
// then skips.
func measurePoison(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	srv, err := startJobServer(o.work)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	env := append([]string{"JOB_HANDLER=http", "JOB_URL=" + srv.url}, append(poisonRetries, fastTimings...)...)
	s := newSide(f, "new", o.bin, r, "kb-poison", o.parts, env...)
	if err := startAll(ctx, o.replicas, s); err != nil {
		return nil, err
	}
	b, err := openBackend(ctx, s)
	if err != nil {
		return nil, err
	}
	defer b.Close()

	others := keyedItems(o.jobs, o.keys-1, "customer-")
	// The poisoned key's jobs spread evenly among the others.
	var mixed []item
	next := 0
	for i, it := range others {
		for next <= o.held && next*len(others) <= i*(o.held+1) {
			mixed = append(mixed, item{Key: poisoned, Rank: next})
			next++
		}
		mixed = append(mixed, it)
	}
	for ; next <= o.held; next++ {
		mixed = append(mixed, item{Key: poisoned, Rank: next})
	}
	alone := make([]item, o.held+1)
	for i := range alone {
		alone[i] = item{Key: instant, Rank: i}
	}
	srv.reset(nil)
	if err := warmUp(ctx, c, others, s); err != nil {
		return nil, err
	}

	limit := time.Duration(o.jobs)*o.work*4 + time.Minute
	var clean, dirty, ratios, early, held, skips, skipsInstant, disorder, served []float64
	for rep := range o.reps {
		runs := []bool{false, true}
		if rep%2 == 1 {
			runs = []bool{true, false}
		}
		for _, poison := range runs {
			if !poison {
				srv.reset(nil)
				t, err := s.drain(ctx, c, others, 0, 5*time.Millisecond, limit)
				if err != nil {
					return nil, err
				}
				clean = append(clean, t.rate())
				continue
			}
			srv.reset(failFirst(poisoned), poisoned)
			t, err := s.drain(ctx, c, mixed, len(others), 5*time.Millisecond, limit)
			if err != nil {
				return nil, err
			}
			dirty = append(dirty, t.rate())
			srv.resetServed() // its own time per job from here on: the held jobs'
			sk, err := parkAndSkip(ctx, s, c, b, srv, poisoned, o.held)
			if err != nil {
				return nil, err
			}
			early, held = append(early, float64(sk.early)), append(held, float64(sk.held))
			skips, disorder = append(skips, msF(sk.took)), append(disorder, float64(sk.bad))
			served = append(served, msF(srv.servedPerJob()))
			fmt.Fprintf(progress, "poison %d/%d: others %.0f jobs/s; parked after %d attempts holding %d later jobs; %d ran before skip; skip to %d committed: %s; in order: %v\n",
				rep+1, o.reps, t.rate(), sk.attempts, sk.held, sk.early, o.held, ms(sk.took), sk.bad == 0)
		}
		ratios = append(ratios, dirty[rep]/clean[rep])

		// The same key alone, answered at once: what the skip costs.
		srv.reset(failFirst(instant), instant)
		srv.setInstant(instant)
		if err := s.enqueue(ctx, alone); err != nil {
			return nil, err
		}
		sk, err := parkAndSkip(ctx, s, c, b, srv, instant, o.held)
		if err != nil {
			return nil, err
		}
		skipsInstant = append(skipsInstant, msF(sk.took))
		early, disorder = append(early, float64(sk.early)), append(disorder, float64(sk.bad))
		fmt.Fprintf(progress, "poison %d/%d, answered at once: %d ran before skip; skip to %d committed: %s; in order: %v\n",
			rep+1, o.reps, sk.early, o.held, ms(sk.took), sk.bad == 0)
	}
	what := fmt.Sprintf("one poisoned key among %d (http, %s per job, %d other jobs; its first job answers 500; %s)", o.keys, o.work, len(others), joinEnv(poisonRetries))
	floor := time.Duration(o.held) * o.work
	return []row{
		{What: what + ": other keys' jobs/s, without it", Vals: clean, Unit: "jobs/s"},
		{What: "  other keys' jobs/s, with it", Vals: dirty, Unit: "jobs/s"},
		{What: "  with ÷ without", Vals: ratios, Unit: "x", Target: "≥ 0.9x", OK: func(v float64) bool { return v >= 0.9 }},
		{What: "  its later jobs held when parked", Vals: held, Unit: ""},
		{What: "  its later jobs run before skip (both keys)", Vals: early, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 }},
		{What: fmt.Sprintf("  skip → its %d held jobs committed, %s each", o.held, o.work), Vals: skips, Unit: "ms", Target: "≤ 1000 ms",
			OK: func(v float64) bool { return v <= 1000 }, Note: fmt.Sprintf("floor %s: one key runs one job at a time", floor)},
		{What: "  the job server's own time per held job", Vals: served, Unit: "ms", Note: fmt.Sprintf("%s asked", o.work)},
		{What: fmt.Sprintf("  skip → %d held jobs committed, answered at once", o.held), Vals: skipsInstant, Unit: "ms", Target: "≤ 1000 ms",
			OK: func(v float64) bool { return v <= 1000 }, Note: "the key alone"},
		{What: "  skips whose held jobs ran out of order or twice", Vals: disorder, Unit: "", Target: "0", OK: func(v float64) bool { return v == 0 }},
	}, nil
}

// skipped is one parked key's skip.
type skipped struct {
	attempts int
	held     int           // its later jobs, held when parked
	early    int           // of those, run before the skip
	took     time.Duration // from the skip's call to the last commit seen
	bad      int           // 1 when the held jobs did not arrive once each, in order
}

// parkAndSkip waits until key is parked, skips its failing job as an
// operator does, and times its held jobs to their commits; the job server
// must watch key.
func parkAndSkip(ctx context.Context, s *side, c *redis.Client, b *backend.Backend, srv *jobServer, key string, held int) (skipped, error) {
	p, err := waitParked(ctx, b.Queues, key, time.Minute)
	if err != nil {
		return skipped{}, err
	}
	before := srv.ranks(key)
	out := skipped{attempts: p.Attempts, held: int(p.Held - 1)}
	for _, rk := range before {
		if rk != 0 {
			out.early++
		}
	}
	base, err := s.committed(ctx, c)
	if err != nil {
		return skipped{}, err
	}
	start := time.Now()
	if _, err := b.Queues.Skip(ctx, jobs.Ref{Key: key}, "keysbench", "the bench's poisoned key"); err != nil {
		return skipped{}, err
	}
	end, err := s.waitCommitted(ctx, c, base+int64(held), time.Millisecond, time.Minute)
	if err != nil {
		return skipped{}, fmt.Errorf("after skip: %w", err)
	}
	out.took = end.Sub(start)
	want := make([]int, held)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(srv.ranks(key)[len(before):], want) {
		out.bad = 1
	}
	return out, nil
}

// waitParked waits until key is parked.
func waitParked(ctx context.Context, r *jobs.Router, key string, limit time.Duration) (jobs.ParkedKey, error) {
	deadline := time.Now().Add(limit)
	for {
		ps, err := r.Parked(ctx)
		if err == nil {
			for _, p := range ps {
				if p.Key == key {
					return p, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return jobs.ParkedKey{}, fmt.Errorf("key %q not parked within %s (last error %v)", key, limit, err)
		}
		select {
		case <-ctx.Done():
			return jobs.ParkedKey{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func msF(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func joinEnv(env []string) string {
	out := ""
	for i, e := range env {
		if i > 0 {
			out += " "
		}
		out += e
	}
	return out
}
