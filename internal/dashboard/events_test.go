package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// served runs d's Run and serves its handler until the test ends: Run is
// stopped first (ending the streams), then the server closed. Each
// finished /events request is reported on ended.
func served(t *testing.T, d *Dashboard) (url string, stopRun func(), ended <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 64)
	h := d.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.URL.Path == "/events" {
			done <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return srv.URL, stop, done
}

// stream is one /events connection.
type stream struct {
	resp *http.Response
	r    *bufio.Reader
}

// frame is one SSE message: its fields, or a comment.
type frame struct {
	retry, event, data, comment string
}

func openStream(t *testing.T, ctx context.Context, url string) *stream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return &stream{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next reads one frame; the request's context bounds the wait.
func (s *stream) next(t *testing.T) frame {
	t.Helper()
	var f frame
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return f
		}
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "retry":
			f.retry = value
		case "event":
			f.event = value
		case "data":
			if f.data != "" {
				t.Fatalf("a frame with two data lines: %q", f.data)
			}
			f.data = value
		case "":
			f.comment = value
		default:
			t.Fatalf("unknown SSE line %q", line)
		}
	}
}

// nextSnapshot skips heartbeats to the next snapshot.
func (s *stream) nextSnapshot(t *testing.T) Snapshot {
	t.Helper()
	for {
		f := s.next(t)
		if f.comment != "" {
			continue
		}
		if f.event != "snapshot" {
			t.Fatalf("event %q, want snapshot (data %s)", f.event, f.data)
		}
		var snap Snapshot
		if err := json.Unmarshal([]byte(f.data), &snap); err != nil {
			t.Fatalf("snapshot data: %v", err)
		}
		return snap
	}
}

func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestEventsFraming: the first frame sets the reconnect delay and carries
// a full snapshot as one data line.
func TestEventsFraming(t *testing.T) {
	d, _, _ := newTestDashboard(t, "")
	url, _, _ := served(t, d)
	s := openStream(t, boundedCtx(t), url)
	if cc := s.resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	f := s.next(t)
	if f.retry != reconnectMs || f.event != "snapshot" {
		t.Errorf("first frame %+v, want retry %s and a snapshot", f, reconnectMs)
	}
	var snap Snapshot
	if err := json.Unmarshal([]byte(f.data), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Self.WorkerID != "lockworker-1" || len(snap.Replicas) != 3 {
		t.Errorf("first snapshot %+v", snap)
	}
}

// TestEventsPushOnChange: a change of the source reaches an open stream
// without the client asking.
func TestEventsPushOnChange(t *testing.T) {
	d, src, _ := newTestDashboard(t, "")
	url, _, _ := served(t, d)
	s := openStream(t, boundedCtx(t), url)
	if got := s.nextSnapshot(t).Self.State; got != "waiting_to_acquire_lock" {
		t.Fatalf("first state %q", got)
	}
	src.set(func(s *Snapshot) { becomeLeader(s, time.Now()) })
	for {
		snap := s.nextSnapshot(t) // a refresh that raced the change may come first
		if snap.Self.State == "working" {
			if snap.Replicas[0].Token != 43 {
				t.Errorf("pushed snapshot: %+v", snap.Replicas[0])
			}
			return
		}
	}
}

// TestEventsReconnect: a new connection gets the shared snapshot without
// a read of its own (a storm of reconnects costs nothing), and a change
// reaches it with the next notice.
func TestEventsReconnect(t *testing.T) {
	d, src, _ := newTestDashboard(t, "")
	url, _, _ := served(t, d)
	ctx := boundedCtx(t)
	first := openStream(t, ctx, url)
	first.nextSnapshot(t)
	first.resp.Body.Close()

	src.mu.Lock()
	src.snap.Self.State = "renew_lock" // no notice yet
	src.mu.Unlock()
	before := src.readCount()
	second := openStream(t, ctx, url)
	if got := second.nextSnapshot(t).Self.State; got != "waiting_to_acquire_lock" {
		t.Errorf("reconnected stream starts with state %q, want the shared waiting_to_acquire_lock", got)
	}
	if n := src.readCount() - before; n != 0 {
		t.Errorf("the reconnect read the source %d times, want 0", n)
	}
	src.notify()
	for second.nextSnapshot(t).Self.State != "renew_lock" { // a refresh may come first
	}
}

func TestEventsHeartbeat(t *testing.T) {
	src := newFakeSource(sampleSnapshot(time.Now()))
	d, err := New(Config{Source: src, HeartbeatInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := served(t, d)
	s := openStream(t, boundedCtx(t), url)
	s.nextSnapshot(t)
	if f := s.next(t); f.comment != "ping" {
		t.Errorf("frame %+v, want the heartbeat comment", f)
	}
}

// TestEventsUnavailable: a failing source is reported without its error,
// which may quote an address or a password.
func TestEventsUnavailable(t *testing.T) {
	d, src, _ := newTestDashboard(t, "")
	src.fail(errors.New("dial redis://default:hunter2-s3cret@10.1.2.3:6379 refused"))
	url, _, _ := served(t, d)
	f := openStream(t, boundedCtx(t), url).next(t)
	if f.event != "unavailable" || !strings.Contains(f.data, unavailable) {
		t.Errorf("frame %+v, want unavailable", f)
	}
	if strings.Contains(f.data, "hunter2") || strings.Contains(f.data, "10.1.2.3") {
		t.Errorf("the source's error leaked: %s", f.data)
	}
}

// TestEventsEndWithRun: when Run returns, open streams end (so a server
// shutdown is not held up by them) and new ones are refused.
func TestEventsEndWithRun(t *testing.T) {
	d, _, _ := newTestDashboard(t, "")
	url, stopRun, _ := served(t, d)
	s := openStream(t, boundedCtx(t), url)
	s.nextSnapshot(t)
	stopRun()
	for {
		_, err := s.r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break // the server ended the stream
		}
		if err != nil {
			t.Fatalf("the stream did not end with Run: %v", err)
		}
	}
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream after Run returned: %s, want 503", resp.Status)
	}
}

// TestEventsClientGone: a client that leaves frees its stream.
func TestEventsClientGone(t *testing.T) {
	src := newFakeSource(sampleSnapshot(time.Now()))
	d, err := New(Config{Source: src, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	url, _, ended := served(t, d)
	ctx, cancel := context.WithCancel(boundedCtx(t))
	s := openStream(t, ctx, url)
	s.nextSnapshot(t)

	full, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	full.Body.Close()
	if full.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream beyond MaxStreams: %s, want 503", full.Status)
	}
	<-ended // the refused one

	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of a client that left did not end within 5s")
	}
	if n := d.hub.count(); n != 0 {
		t.Errorf("%d streams still subscribed", n)
	}
	openStream(t, boundedCtx(t), url).nextSnapshot(t)
}
