package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// openFDs is how many descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// rssKiB is process pid's resident memory.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	return 0
}

// idleConn opens a keep-alive connection to w, asks GET /healthz on it,
// reads the answer and leaves the connection open and idle; nil when the
// server closed it (refused, or evicted before it answered).
func idleConn(t *testing.T, w *worker) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return c
}

// TestIdleConnectionsDoNotStarveTheReplica: a crowd of idle keep-alive
// connections, ten times HTTP_MAX_CONNS, holds at most HTTP_MAX_CONNS
// descriptors of the leader (each new one evicts the longest idle); the
// probes answer, and jobs that each start a process (descriptors: pipes)
// keep committing, none dead-lettered.
func TestIdleConnectionsDoNotStarveTheReplica(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	const maxConns, crowd = 32, 320
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "HTTP_MAX_CONNS="+strconv.Itoa(maxConns),
		"JOB_HANDLER=exec", "JOB_COMMAND=cat")
	w := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 leads", func() bool { return len(leaders(w)) == 1 })
	pid := w.cmd.Process.Pid
	fdsBefore, rssBefore := openFDs(t, pid), rssKiB(t, pid)

	answered := 0
	for range crowd {
		if idleConn(t, w) != nil {
			answered++
		}
	}
	fdsCrowd, rssCrowd := openFDs(t, pid), rssKiB(t, pid)
	t.Logf("%d idle connections opened (%d answered): descriptors %d -> %d, RSS %d -> %d KiB",
		crowd, answered, fdsBefore, fdsCrowd, rssBefore, rssCrowd)
	// A request that comes in just before the one before it was marked
	// idle is answered without a place and closed after its answer instead
	// of evicting it: a few such may still be closing; the Redis pool may
	// grow by a connection or two meanwhile.
	const closing = 8
	if fdsCrowd > fdsBefore+maxConns+closing+4 {
		t.Errorf("the crowd holds %d descriptors, want at most HTTP_MAX_CONNS (%d) and a few closing more than the %d before", fdsCrowd, maxConns, fdsBefore)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(w.url(path))
		if err != nil {
			t.Fatalf("%s under the crowd: %v", path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s under the crowd: %d, want 200", path, resp.StatusCode)
		}
	}
	enqueueN(t, env, 20)
	waitCommitted(t, env, 20)
	if st := queueStatus(t, env); st.DeadLettered != 0 {
		t.Errorf("%d jobs dead-lettered under the crowd, want 0", st.DeadLettered)
	}
}

// postSlowly starts POST /jobs with an NDJSON body of n bytes (lines of
// 8 KiB) and returns once the server holds room for it: with
// "Expect: 100-continue", net/http says "100 Continue" when the handler
// first reads the body, which it does only after reserving its bytes. It
// then sends all but the body's last byte; finish sends that and returns
// the status.
func postSlowly(t *testing.T, w *worker, n int) (finish func() int) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	line := append(append([]byte(`"`), bytes.Repeat([]byte("x"), 8<<10-3)...), '"', '\n')
	body := bytes.Repeat(line, n/len(line))
	head := fmt.Sprintf("POST /jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
		testJobsToken, len(body))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("a slow body refused: %s, want 100 Continue", resp.Status)
	}
	if _, err := c.Write(body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}
	return func() int {
		if _, err := c.Write(body[len(body)-1:]); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
}

// TestBodiesInFlightAreBounded: while bodies of HTTP_MAX_BODY_BYTES in
// all are being read, another POST /jobs is refused with 503 and
// Retry-After before its body is read; once they are done, it goes in.
func TestBodiesInFlightAreBounded(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	const bound = 8 << 20
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "JOBS_TOKEN="+testJobsToken,
		"HTTP_MAX_BODY_BYTES="+strconv.Itoa(bound))
	w := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 answers", func() bool { _, ok := w.status(); return ok })
	pid := w.cmd.Process.Pid
	rssBefore := rssKiB(t, pid)

	finishA := postSlowly(t, w, bound/2)
	finishB := postSlowly(t, w, bound/2)
	post := func() *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url("/jobs"), strings.NewReader(`{"n":1}`+"\n"))
		req.Header.Set("Authorization", "Bearer "+testJobsToken)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	// The two slow bodies hold the bound: a small one is refused.
	refused := post()
	if refused.StatusCode != http.StatusServiceUnavailable || refused.Header.Get("Retry-After") == "" {
		t.Errorf("a body past the bound: %s (Retry-After %q), want 503 with Retry-After", refused.Status, refused.Header.Get("Retry-After"))
	}
	rssFull := rssKiB(t, pid)
	if code := finishA(); code != http.StatusAccepted {
		t.Errorf("first slow body: %d, want 202", code)
	}
	if code := finishB(); code != http.StatusAccepted {
		t.Errorf("second slow body: %d, want 202", code)
	}
	if resp := post(); resp.StatusCode != http.StatusAccepted {
		t.Errorf("after the slow bodies: %d, want 202", resp.StatusCode)
	}
	t.Logf("RSS %d KiB before, %d KiB with %d bytes of bodies in flight", rssBefore, rssFull, bound)
}

// firstFreeFD is the lowest descriptor number process pid does not use:
// the next one it would open.
func firstFreeFD(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		used[n] = true
	}
	n := 0
	for used[n] {
		n++
	}
	return n
}

// TestHostFaultMovesTheLeadership: the leader runs out of descriptors (its
// RLIMIT_NOFILE lowered under the descriptors it holds, as a flood of
// connections would leave it): no job it cannot start is counted as a
// failed attempt (JOB_MAX_ATTEMPTS=1 would dead-letter it at once), and
// after a few it gives its leadership up; the healthy replica takes over
// and runs every job.
func TestHostFaultMovesTheLeadership(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "JOB_HANDLER=exec", "JOB_COMMAND=cat", "JOB_MAX_ATTEMPTS=1")
	sick := startWorker(t, "worker-sick", env...)
	poll.Until(t, 10*time.Second, "worker-sick leads", func() bool { return len(leaders(sick)) == 1 })
	healthy := startWorker(t, "worker-healthy", env...)
	poll.Until(t, 10*time.Second, "worker-healthy follows", func() bool {
		s, ok := healthy.status()
		return ok && s.State == "waiting_to_acquire_lock"
	})
	enqueueN(t, env, 3)
	waitCommitted(t, env, 3) // the leader runs jobs while it can

	pid := sick.cmd.Process.Pid
	limit := strconv.Itoa(firstFreeFD(t, pid))
	if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(pid), "--nofile="+limit+":"+limit).CombinedOutput(); err != nil {
		t.Skipf("prlimit: %v: %s", err, out)
	}
	enqueueN(t, env, 10)
	poll.Until(t, 30*time.Second, "worker-healthy leads", func() bool { return len(leaders(healthy)) == 1 })
	waitCommitted(t, env, 13)
	if st := queueStatus(t, env); st.DeadLettered != 0 {
		t.Errorf("%d jobs dead-lettered, want 0: a host fault costs no attempt", st.DeadLettered)
	}
	if !strings.Contains(sick.out.String(), "giving the leadership up") {
		t.Error("worker-sick did not log that it gave its leadership up for a host fault")
	}
}

// commandsProcessed is Redis's total_commands_processed.
func commandsProcessed(t *testing.T, r *redistest.Server) int64 {
	t.Helper()
	info, err := r.Client().Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no total_commands_processed in INFO stats")
	return 0
}

// TestSnapshotReadersShareOneRead: 50 readers asking /api/snapshot 10
// times each cost Redis about one snapshot's commands, not one per
// request (a snapshot is about 19 commands).
func TestSnapshotReadersShareOneRead(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info")
	w := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 leads", func() bool { return len(leaders(w)) == 1 })
	const readers, each = 50, 10
	before, start := commandsProcessed(t, r), time.Now()
	done := make(chan error, readers)
	for range readers {
		go func() {
			var err error
			for range each {
				var resp *http.Response
				if resp, err = http.Get(w.url("/api/snapshot")); err != nil {
					break
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("/api/snapshot: %s", resp.Status)
					break
				}
			}
			done <- err
		}()
	}
	for range readers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	n, took := commandsProcessed(t, r)-before, time.Since(start)
	t.Logf("%d requests of /api/snapshot in %s: %d Redis commands, the replica's own traffic included", readers*each, took, n)
	if n >= 19*readers {
		t.Errorf("%d requests cost %d Redis commands, want far fewer than one snapshot (about 19) per reader", readers*each, n)
	}
}

// openEvents opens GET /events on w from the loopback address from, with
// the admin token when admin; it returns the status code and leaves a
// stream open until the test ends.
func openEvents(t *testing.T, w *worker, from string, admin bool) int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext,
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, w.url("/events"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if admin {
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
	}
	return resp.StatusCode
}

// TestStreamsCappedPerClient: one address gets 4 streams; 64 anonymous
// streams from 16 addresses take the replica's anonymous streams, and
// then a request bearing the admin token still gets a stream while
// another address is refused.
func TestStreamsCappedPerClient(t *testing.T) {
	processTest(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "LOG_LEVEL=info", "ADMIN_TOKEN="+testAdminToken)
	w := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 answers", func() bool { _, ok := w.status(); return ok })
	pid := w.cmd.Process.Pid
	fdsBefore, rssBefore := openFDs(t, pid), rssKiB(t, pid)
	for i := range 16 {
		from := fmt.Sprintf("127.0.0.%d", 10+i)
		for range 4 {
			if code := openEvents(t, w, from, false); code != http.StatusOK {
				t.Fatalf("stream from %s: %d, want 200", from, code)
			}
		}
		if i == 0 {
			if code := openEvents(t, w, from, false); code != http.StatusServiceUnavailable {
				t.Fatalf("a fifth stream from %s: %d, want 503", from, code)
			}
		}
	}
	if code := openEvents(t, w, "127.0.0.99", false); code != http.StatusServiceUnavailable {
		t.Errorf("a 65th anonymous stream: %d, want 503", code)
	}
	if code := openEvents(t, w, "127.0.0.10", true); code != http.StatusOK {
		t.Errorf("a stream with the admin token past the cap: %d, want 200", code)
	}
	if resp, err := http.Get(w.url("/api/snapshot")); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/api/snapshot with every stream taken: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	t.Logf("65 streams: descriptors %d -> %d, RSS %d -> %d KiB", fdsBefore, openFDs(t, pid), rssBefore, rssKiB(t, pid))
}
