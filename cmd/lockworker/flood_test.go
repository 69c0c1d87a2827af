package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/testkit/flood"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// floodConns is how many half-open connections TestHalfOpenFlood opens.
const floodConns = 20_000

// raiseNofile raises this process's RLIMIT_NOFILE soft limit to its hard
// limit (the Go runtime leaves it one short) and returns the limit.
func raiseNofile(t *testing.T) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	return lim.Cur
}

// nofileOf is process pid's RLIMIT_NOFILE soft limit.
func nofileOf(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			n, err := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Max open files in /proc/PID/limits")
	return 0
}

// TestHalfOpenFlood: 20,000 connections from 127.0.0.1, each sending
// "GET / HTTP/1.1\r\nX: " and never finishing its headers, while
// /healthz and /readyz are asked from 127.0.0.2 (a kubelet's address) on
// a new connection each, and POST /jobs from 127.0.0.3: every probe is
// answered 200, every POST 202 and its job committed, and the replica
// holds no more descriptors for the flood than its address's share of
// the pending connections. The flood's side closes each connection the
// replica has closed, so the test needs descriptors only for what the
// replica keeps.
func TestHalfOpenFlood(t *testing.T) {
	processTest(t)
	if nofile := raiseNofile(t); nofile < 4096 {
		t.Skipf("RLIMIT_NOFILE hard limit %d: the flood wants at least 4096 descriptors in this process and the replica (raise it: ulimit -Hn, or the container's nofile ulimit)", nofile)
	}
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "JOBS_TOKEN="+testJobsToken)
	w := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 leads", func() bool { return len(leaders(w)) == 1 })
	pid := w.cmd.Process.Pid
	lim, err := httpapi.NewConnLimiter(httpapi.ConnLimits{MaxConns: httpapi.ConnsWithin(nofileOf(t, pid)/2, 1024)})
	if err != nil {
		t.Fatal(err)
	}
	fdsBefore, rssBefore := openFDs(t, pid), rssKiB(t, pid)

	addr := fmt.Sprintf("127.0.0.1:%d", w.port)
	f, err := flood.Start(flood.Config{Addr: addr, From: "127.0.0.1", Conns: floodConns})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prober, poster := flood.NewAsker("127.0.0.2", 10*time.Second), flood.NewAsker("127.0.0.3", 10*time.Second)
	defer prober.Close()
	defer poster.Close()
	auth := http.Header{"Authorization": {"Bearer " + testJobsToken}}
	peakFDs, peakRSS := fdsBefore, rssBefore
	round := func(i int) {
		for _, path := range []string{"/healthz", "/readyz"} {
			prober.Ask(t.Context(), http.MethodGet, w.url(path), "", nil, http.StatusOK)
		}
		if i%10 == 0 {
			poster.Ask(t.Context(), http.MethodPost, w.url("/jobs"), fmt.Sprintf(`{"round":%d}`, i), auth, http.StatusAccepted)
		}
		peakFDs, peakRSS = max(peakFDs, openFDs(t, pid)), max(peakRSS, rssKiB(t, pid))
	}
	during := 0
	for flooding := true; flooding; {
		select {
		case <-f.Done():
			flooding = false
		default:
			round(during)
			during++
		}
	}
	res := f.Result()
	// The flood's connections the replica still holds wait out its
	// ReadHeaderTimeout: ask again while they do.
	for i := range 20 {
		round(i)
	}
	t.Logf("%d connections opened from 127.0.0.1 (%d failed, %d closed by the replica, at most %d open at once on the flood's side); "+
		"%d probe rounds during the flood: probes %d of %d answered (p50 %s, max %s), POST /jobs %d of %d accepted; "+
		"replica (RLIMIT_NOFILE %d, %d pending per address): descriptors %d before, %d at most; RSS %d KiB before, %d KiB at most",
		res.Opened, res.Failed, res.ClosedByServer, res.PeakHeld, during, prober.Answered, prober.Asked,
		prober.Quantile(0.5), prober.Quantile(1), poster.Answered, poster.Asked,
		nofileOf(t, pid), lim.Limits().MaxPendingPerClient, fdsBefore, peakFDs, rssBefore, peakRSS)
	if res.Opened != floodConns {
		t.Errorf("the flood opened %d connections of %d: %v", res.Opened, floodConns, res.FirstError)
	}
	if during == 0 {
		t.Error("no probe was asked during the flood")
	}
	if prober.Answered != prober.Asked {
		t.Errorf("probes: %d of %d answered 200; first failures: %q", prober.Answered, prober.Asked, prober.Failures)
	}
	if poster.Answered != poster.Asked {
		t.Errorf("POST /jobs from another address: %d of %d accepted; first failures: %q", poster.Answered, poster.Asked, poster.Failures)
	}
	// The flood's address gets its share of the pending connections; the
	// places of HTTP_MAX_CONNS stay free. (Evicted connections close a
	// moment after they are counted out, and the probes and Redis hold a
	// few: half the places is a bound far from both.)
	if bound := fdsBefore + lim.Limits().MaxPendingPerClient + lim.Limits().MaxConns/2; peakFDs > bound {
		t.Errorf("the replica held up to %d descriptors under the flood, want at most %d (%d before, %d pending for one address)",
			peakFDs, bound, fdsBefore, lim.Limits().MaxPendingPerClient)
	}
	f.Close()
	waitCommitted(t, env, int64(poster.Answered))
}
