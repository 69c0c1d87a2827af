package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"
)

// reconnectMs is the delay a browser's EventSource waits before it
// reconnects a dropped stream.
const reconnectMs = "2000"

// serveEvents streams Server-Sent Events. On connect, a fresh snapshot;
// then each push of Run; a comment line every HeartbeatInterval:
//
//	retry: 2000
//	event: snapshot
//	data: {"self":...}
//
//	event: unavailable
//	data: {"error":"data source unavailable"}
//
//	: ping
//
// The stream ends when the client goes away, when a write stalls for
// WriteTimeout, or when Run returns.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	client, _, _ := net.SplitHostPort(r.RemoteAddr)
	sub, ok := d.hub.subscribe(client, d.bearsAdminToken(r))
	if !ok {
		// The page falls back to polling /api/snapshot (the same snapshot).
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many streams, or shutting down"})
		return
	}
	defer d.hub.unsubscribe(sub)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		// Per write, so a server-wide WriteTimeout does not cut the
		// stream; unsupported by some writers, which is fine.
		_ = rc.SetWriteDeadline(time.Now().Add(d.cfg.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// Subscribed first, so a change during this read is pushed after it.
	if !write(append([]byte("retry: "+reconnectMs+"\n"), d.event(context.WithoutCancel(r.Context()), sub.admin)...)) {
		return
	}
	heartbeat := time.NewTicker(d.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-d.hub.done:
			return
		case msg = <-sub.ch:
		case <-heartbeat.C:
			msg = []byte(": ping\n\n")
		}
		if !write(msg) {
			return
		}
	}
}

// event is one SSE frame: a snapshot (the admin view or the public one,
// see views), or word that there is none.
func (d *Dashboard) event(ctx context.Context, admin bool) []byte {
	var b bytes.Buffer
	v, err := d.latest(ctx)
	data := v.of(admin)
	if err != nil {
		b.WriteString("event: unavailable\ndata: ")
		data, _ = json.Marshal(map[string]any{"error": unavailable, "at": time.Now()})
	} else {
		b.WriteString("event: snapshot\ndata: ")
	}
	b.Write(data) // json.Marshal writes no newline, so one data line
	b.WriteString("\n\n")
	return b.Bytes()
}
