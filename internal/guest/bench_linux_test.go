//go:build linux

package guest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkKillAtDeadline measures how long after the lease deadline a
// command that ignores SIGTERM dies (its pidfd turns readable when it
// exits) and Run returns, when the lease is lost with 200ms left and Grace
// is 5s. Run with -benchtime=20x; it reports min, median and max.
func BenchmarkKillAtDeadline(b *testing.B) {
	var died, returned []time.Duration
	for b.Loop() {
		d, r := killAtDeadlineOnce(b)
		died, returned = append(died, d), append(returned, r)
		b.Logf("died %s returned %s", d, r)
	}
	report := func(name string, xs []time.Duration) {
		slices.Sort(xs)
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(ms(xs[0]), name+"-min-ms")
		b.ReportMetric(ms(xs[len(xs)/2]), name+"-median-ms")
		b.ReportMetric(ms(xs[len(xs)-1]), name+"-max-ms")
	}
	report("died", died)
	report("returned", returned)
}

func killAtDeadlineOnce(b *testing.B) (died, returned time.Duration) {
	out := &lockedBuffer{}
	g, err := New(Config{Command: sh(`trap 'echo term' TERM; echo $$; while :; do sleep 0.05; done`), Grace: 5 * time.Second, Stdout: out, AllowEnv: []string{"GORACE"}})
	if err != nil {
		b.Fatal(err)
	}
	var deadline atomic.Pointer[time.Time]
	far := time.Now().Add(time.Hour)
	deadline.Store(&far)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	done := start(g, ctx, func() time.Time { return *deadline.Load() })
	var line string
	if !waitFor(settle, func() bool { line, _, _ = strings.Cut(out.String(), "\n"); return strings.Contains(out.String(), "\n") }) {
		b.Fatal("the command did not start")
	}
	pid, err := strconv.Atoi(line)
	if err != nil {
		b.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	exited := make(chan time.Time, 1)
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		exited <- time.Now()
	}()
	at := time.Now().Add(200 * time.Millisecond)
	deadline.Store(&at)
	cancel()
	select {
	case <-done:
	case <-time.After(settle):
		b.Fatal("Run did not return")
	}
	end := time.Now()
	return (<-exited).Sub(at), end.Sub(at)
}
