package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lockworker/lockworker/internal/fleet"
)

// The movement runs' timings (fastTimings).
const (
	moveTTL   = 2 * time.Second
	moveRenew = 500 * time.Millisecond
)

// quiet is how long a fleet must make no move before a join counts as
// done: several registry periods, so a late move is not missed.
const quiet = 6 * moveRenew

// measureMoves: per repetition, the replica owning the most partitions
// gets SIGTERM, a replica joins, the one owning the most gets kill -9,
// a replica joins again.
func measureMoves(ctx context.Context, o options, progress io.Writer) ([]row, error) {
	f := fleet.New(ctx)
	defer f.Close()
	r, err := f.StartRedis(ctx, fleet.RedisSpec{Name: "redis"})
	if err != nil {
		return nil, err
	}
	own := newOwnership()
	g := newGroup(f, o.bin, r, fmt.Sprintf("pb-move-p%d", o.parts), o.parts,
		append([]string{"LOG_FORMAT=json", "LOG_LEVEL=info"}, fastTimings...)...)
	g.output = own.writer
	if err := g.startBalanced(ctx, o.replicas, time.Minute); err != nil {
		return nil, err
	}
	if err := settle(ctx, own, g, time.Minute); err != nil {
		return nil, err
	}

	var termP99, kills, joins, moved []float64
	var termAll []time.Duration
	for rep := range o.reps {
		term, err := stop(ctx, own, g, false)
		if err != nil {
			return nil, fmt.Errorf("SIGTERM: %w", err)
		}
		termAll = append(termAll, term...)
		termP99 = append(termP99, msF(summarize(term).p99))
		fmt.Fprintf(progress, "move %d/%d: SIGTERM: %d partitions working elsewhere after %v\n", rep+1, o.reps, len(term), msList(term))
		for _, crash := range []bool{false, true} {
			if crash {
				k, err := stop(ctx, own, g, true)
				if err != nil {
					return nil, fmt.Errorf("kill -9: %w", err)
				}
				last := slices.Max(k)
				kills = append(kills, msF(last))
				fmt.Fprintf(progress, "move %d/%d: kill -9: %d partitions owned again after %v\n", rep+1, o.reps, len(k), msList(k))
			}
			took, n, err := join(ctx, own, g)
			if err != nil {
				return nil, fmt.Errorf("join: %w", err)
			}
			joins, moved = append(joins, msF(took)), append(moved, float64(n))
			fmt.Fprintf(progress, "move %d/%d: join: balanced after %s, %d partitions moved\n", rep+1, o.reps, ms(took), n)
		}
	}
	all := summarize(termAll)
	killTarget := moveTTL + 250*time.Millisecond
	return []row{
		{What: fmt.Sprintf("SIGTERM to the replica owning the most of %d: each of its partitions working elsewhere, p99 of the run", o.parts),
			Vals: termP99, Unit: "ms", Target: "p99 < 100 ms", OK: func(v float64) bool { return v < 100 },
			Note: fmt.Sprintf("all %d samples: p50 %s, p99 %s", all.n, ms(all.p50), ms(all.p99))},
		{What: "kill -9 of the replica owning the most: every partition owned again (LOCK_TTL=2s)", Vals: kills, Unit: "ms",
			Target: "≤ LOCK_TTL + 250 ms = " + ms(killTarget), OK: func(v float64) bool { return v <= msF(killTarget) }},
		{What: "a replica joins (timed from its start): the fleet balanced again", Vals: joins, Unit: "ms",
			Note: fmt.Sprintf("%d joins", len(joins))},
		{What: "  partitions moved by a join", Vals: moved, Unit: "",
			Note: fmt.Sprintf("share of the joiner: %d or %d", o.parts/o.replicas, (o.parts+o.replicas-1)/o.replicas)},
	}, nil
}

// stop sends SIGTERM (or SIGKILL, crash) to the live replica that owns the
// most partitions, and returns for each of them how long after the signal
// another replica's chart reached working for it. It waits for the
// replica's exit and for the others to share the partitions.
func stop(ctx context.Context, own *ownership, g *group, crash bool) ([]time.Duration, error) {
	owned, err := g.leads(ctx)
	if err != nil {
		return nil, err
	}
	victim := most(owned, g.live)
	theirs := owned[victim]
	i := own.mark()
	at := time.Now()
	if crash {
		err = victim.Kill()
	} else {
		err = victim.Terminate()
	}
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 4*moveTTL+10*time.Second)
	defer cancel()
	taken := map[int]time.Time{}
	_, err = own.await(wait, i, func(ms []move) bool {
		for _, m := range ms {
			if m.acquired && m.replica != victim.Name && slices.Contains(theirs, m.partition) {
				if _, ok := taken[m.partition]; !ok {
					taken[m.partition] = m.at
				}
			}
		}
		return len(taken) == len(theirs)
	})
	if err != nil {
		return nil, fmt.Errorf("%s's partitions %v: %d taken over: %w\n%s", victim.Name, theirs, len(taken), err, victim.LastLines(10))
	}
	if err := victim.Wait(wait); err != nil && !crash {
		return nil, fmt.Errorf("%s after SIGTERM: %w", victim.Name, err)
	}
	g.drop(victim)
	if err := g.waitBalanced(ctx, time.Minute); err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, t := range taken {
		out = append(out, t.Sub(at))
	}
	slices.Sort(out)
	return out, nil
}

// join starts a replica and returns how long after its start the fleet
// was balanced (the last move before the fleet went quiet, balanced) and
// how many partitions moved.
func join(ctx context.Context, own *ownership, g *group) (time.Duration, int, error) {
	i := own.mark()
	at := time.Now()
	if _, err := g.add(); err != nil {
		return 0, 0, err
	}
	if err := settle(ctx, own, g, time.Minute); err != nil {
		return 0, 0, err
	}
	var last time.Time
	n := 0
	for _, m := range own.since(i) {
		if m.acquired {
			n++
			last = m.at
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	return last.Sub(at), n, nil
}

// settle waits until the live replicas share the partitions and no move
// was logged for quiet.
func settle(ctx context.Context, own *ownership, g *group, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if err := g.waitBalanced(ctx, time.Until(deadline)); err != nil {
			return err
		}
		i := own.mark()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		if own.mark() == i {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the fleet kept moving partitions for %s", limit)
		}
	}
}
