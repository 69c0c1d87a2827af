package dashboard

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestStreamCaps: one client address gets MaxStreamsPerClient streams,
// another still gets one; with every anonymous stream taken, a request
// bearing the admin token still gets AdminStreams more, and a refusal
// says when to come back.
func TestStreamCaps(t *testing.T) {
	h := newHub(3, 2, 1)
	for range 2 {
		if _, ok := h.subscribe("198.51.100.1", false); !ok {
			t.Fatal("a client's first two streams refused")
		}
	}
	if _, ok := h.subscribe("198.51.100.1", false); ok {
		t.Error("a client's third stream admitted past MaxStreamsPerClient")
	}
	b, ok := h.subscribe("198.51.100.2", false)
	if !ok {
		t.Fatal("another client refused while the global cap has room")
	}
	if _, ok := h.subscribe("198.51.100.3", false); ok {
		t.Error("a stream admitted past MaxStreams")
	}
	if _, ok := h.subscribe("198.51.100.3", true); !ok {
		t.Error("the admin token's bearer refused with its room free")
	}
	if _, ok := h.subscribe("198.51.100.3", true); ok {
		t.Error("an admin stream admitted past MaxStreams+AdminStreams")
	}
	h.unsubscribe(b)
	if _, ok := h.subscribe("198.51.100.3", false); !ok {
		t.Error("a stream refused after another ended")
	}

	d, _, _ := newTestDashboard(t, "admin-token-0123456789")
	d.hub = newHub(1, 1, 1)
	d.hub.subscribe("192.0.2.1", false) // the one anonymous stream
	rec := do(d.Handler(), "GET", "/events", "")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a stream past the cap: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestSnapshotShared: any number of concurrent /api/snapshot readers cost
// one read of the source; a change notice makes the next reader read it
// again, once.
func TestSnapshotShared(t *testing.T) {
	d, src, _ := newTestDashboard(t, "")
	url, _, _ := served(t, d)
	get := func() {
		resp, err := http.Get(url + "/api/snapshot")
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/api/snapshot: %s", resp.Status)
		}
	}
	burst := func() {
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				for range 10 {
					get()
				}
			})
		}
		wg.Wait()
	}
	before := src.readCount()
	burst()
	if n := src.readCount() - before; n != 1 {
		t.Errorf("500 reads of /api/snapshot read the source %d times, want 1", n)
	}
	d.invalidate() // as Run does on a change notice
	before = src.readCount()
	burst()
	if n := src.readCount() - before; n != 1 {
		t.Errorf("after a change, 500 reads read the source %d times, want 1", n)
	}
}

// TestEventsOutliveServerTimeouts: a stream served by an http.Server with
// short ReadTimeout and WriteTimeout (the daemon's are 30 s) keeps going
// well past both: it moves its own write deadline per write (net/http
// clears the read deadline itself once the request is read).
func TestEventsOutliveServerTimeouts(t *testing.T) {
	src := newFakeSource(sampleSnapshot(time.Now()))
	d, err := New(Config{Source: src, HeartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(d.Handler())
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	s := openStream(t, boundedCtx(t), srv.URL)
	s.nextSnapshot(t)
	start := time.Now()
	pings := 0
	for time.Since(start) < 500*time.Millisecond { // five times either timeout
		if s.next(t).comment == "ping" {
			pings++
		}
	}
	if pings == 0 {
		t.Fatal("no heartbeat")
	}
}
