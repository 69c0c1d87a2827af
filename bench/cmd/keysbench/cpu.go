package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/lockworker/lockworker/bench/internal/benchkit"
	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

// cpuUse is the CPU time the parts of one run used: the side's replicas
// (/proc/<pid>/stat), Redis (INFO cpu) and this process, which holds the
// http handler's job server (getrusage).
type cpuUse struct {
	replicas, redis, bench time.Duration
}

func (u cpuUse) total() time.Duration { return u.replicas + u.redis + u.bench }

func (u cpuUse) minus(v cpuUse) cpuUse {
	return cpuUse{replicas: u.replicas - v.replicas, redis: u.redis - v.redis, bench: u.bench - v.bench}
}

func (u cpuUse) String() string {
	return fmt.Sprintf("CPU: replicas %s, Redis %s, bench %s", u.replicas.Round(time.Millisecond), u.redis.Round(time.Millisecond), u.bench.Round(time.Millisecond))
}

// readCPU reads the CPU time used so far by s's replicas, Redis and this
// process.
func readCPU(ctx context.Context, s *side, c *redis.Client) (cpuUse, error) {
	var u cpuUse
	for _, p := range s.live {
		pr, err := procfs.NewProc(p.PID())
		if err != nil {
			return cpuUse{}, err
		}
		st, err := pr.Stat()
		if err != nil {
			return cpuUse{}, err
		}
		u.replicas += time.Duration(st.CPUTime() * float64(time.Second))
	}
	rs, err := benchkit.ReadServerStats(ctx, c)
	if err != nil {
		return cpuUse{}, err
	}
	u.redis = rs.CPU
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuUse{}, err
	}
	u.bench = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return u, nil
}

// loadAverage is the machine's 1-minute load average, or -1.
func loadAverage() float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return -1
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return -1
	}
	return l.Load1
}
