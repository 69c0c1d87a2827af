package jobs

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/jobs/figures"
)

// Stats reads the queue's figures at one instant (one script, one round
// trip).
func (q *Queue) Stats(ctx context.Context) (figures.Queue, error) {
	reply, err := statsScript.Run(ctx, q.cfg.Client, q.statsKeys()).Slice()
	if err != nil {
		return figures.Queue{}, fmt.Errorf("jobs: stats: %w", err)
	}
	return parseStats(reply)
}

// statsKeys is stats.lua's KEYS, in its header's order.
func (q *Queue) statsKeys() []string {
	return []string{q.counters, q.dead, q.epoch, q.paused, q.ready, q.inflight, q.parked, q.delayed}
}

// statsOf reads the figures of every queue in one round trip (a pipeline
// of the script, sent again with its body if the server lacks it).
func statsOf(ctx context.Context, c redis.Cmdable, queues []*Queue) ([]figures.Queue, error) {
	run := func(eval bool) []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(queues))
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, q := range queues {
				if eval {
					cmds[i] = statsScript.Eval(ctx, p, q.statsKeys())
				} else {
					cmds[i] = statsScript.EvalSha(ctx, p, q.statsKeys())
				}
			}
			return nil
		})
		return cmds
	}
	cmds := run(false)
	if redis.HasErrorPrefix(cmds[0].Err(), "NOSCRIPT") {
		cmds = run(true)
	}
	out := make([]figures.Queue, len(queues))
	for i, cmd := range cmds {
		reply, err := cmd.Slice()
		if err == nil {
			out[i], err = parseStats(reply)
		}
		if err != nil {
			return nil, fmt.Errorf("jobs: stats: %w", err)
		}
	}
	return out, nil
}

// parseStats decodes stats.lua's reply.
func parseStats(reply []any) (figures.Queue, error) {
	var v [12]int64
	if len(reply) != len(v) {
		return figures.Queue{}, fmt.Errorf("jobs: stats: malformed reply of %d items", len(reply))
	}
	for i, x := range reply {
		n, ok := x.(int64)
		if !ok {
			return figures.Queue{}, fmt.Errorf("jobs: stats: malformed reply %v", reply)
		}
		v[i] = n
	}
	now := v[10]
	ago := func(ms int64) int64 {
		if ms == 0 {
			return 0
		}
		return max(1, now-ms) // rounded up: 0 only when there is none
	}
	return figures.Queue{
		Pending: v[0], Committed: v[1], Retries: v[2], DeadLettered: v[3], Epoch: v[4], Paused: v[5] == 1,
		InFlight: v[6], Parked: v[7], OldestPendingMs: ago(v[8]), OldestParkedMs: ago(v[9]), Delayed: v[11],
	}, nil
}
