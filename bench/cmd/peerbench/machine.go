package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

// describeMachine is the report's first line: what the figures were
// measured on.
func describeMachine(ctx context.Context, c *redis.Client) string {
	cpu := "unknown CPU"
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if infos, err := fs.CPUInfo(); err == nil && len(infos) > 0 {
			cpu = infos[0].ModelName
		}
	}
	version := "unknown"
	if info, err := c.InfoMap(ctx, "server").Result(); err == nil {
		version = info["Server"]["redis_version"]
	}
	return fmt.Sprintf("nproc %d (GOMAXPROCS %d, %s), %s %s/%s, redis-server %s on loopback, shared with the benchmark",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH, version)
}

// moduleVersion is the version of a dependency this binary was built with.
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
