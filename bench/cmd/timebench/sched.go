package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// schedTimes is what Linux's scheduler says of a process, its threads
// summed (/proc/PID/task/*/schedstat): time on a CPU, and time runnable
// but waiting for one. On a shared host the second is why a timer that
// fired on time still starts its work late.
type schedTimes struct {
	cpu, wait time.Duration
}

// readSched sums the schedstat of pid's threads; zero where there is no
// /proc (a thread that ended since is left out: the sums are a floor).
func readSched(pid int) schedTimes {
	var s schedTimes
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		cpu, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		s.cpu += time.Duration(cpu)
		s.wait += time.Duration(wait)
	}
	return s
}

func (s schedTimes) sub(before schedTimes) schedTimes {
	return schedTimes{cpu: s.cpu - before.cpu, wait: s.wait - before.wait}
}

// loadAverage is the host's 1-minute load average (0 without /proc).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
