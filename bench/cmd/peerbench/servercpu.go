package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverCPU is the CPU time the redis-servers behind nodes have used so
// far (INFO cpu, user + system, summed over the nodes). Its change over a
// cell, per operation, is the server's share of a cycle: script work,
// parsing, and the socket reads and writes. Each cell's servers serve only
// that cell, so the change is the cell's own.
func serverCPU(ctx context.Context, nodes []*redis.Client) (time.Duration, error) {
	var total float64
	for _, n := range nodes {
		info, err := n.InfoMap(ctx, "cpu").Result()
		if err != nil {
			return 0, err
		}
		for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := strconv.ParseFloat(info["CPU"][k], 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			total += v
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}
