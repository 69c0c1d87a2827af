package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/chartsvg"
	"github.com/lockworker/lockworker/internal/machine"
)

//go:embed assets
var assets embed.FS

// ErrRunTwice is returned by a second call to Run.
var ErrRunTwice = errors.New("dashboard: Run called more than once")

// Dashboard serves the page, its API and its live stream. Build it with
// New, mount Handler, and run Run, which feeds /events.
type Dashboard struct {
	cfg       Config
	chartJSON []byte
	svg       []byte
	red       *redactor
	hub       *hub
	kick      chan struct{} // an action asks Run for a push now
	ran       atomic.Bool

	// The snapshot every reader shares (latest): /api/snapshot, a new
	// stream's first event and Run's pushes.
	mu    sync.Mutex
	gen   uint64 // bumped by invalidate
	cache cached
	reads singleflight.Group
}

// cached is one read of the Source, encoded: data, or err; read under
// generation gen.
type cached struct {
	data views
	err  error
	at   time.Time
	gen  uint64
}

// views are one snapshot encoded for anyone (errors as their classes:
// Snapshot.public) and for the admin token's bearers (errors in full).
type views struct {
	public, admin []byte
}

// of is the view for a reader who bears the admin token or not.
func (v views) of(admin bool) []byte {
	if admin {
		return v.admin
	}
	return v.public
}

// drawnChart places the chart once per process: the machine's chart is
// fixed at build time.
var drawnChart = sync.OnceValues(func() (struct{ json, svg []byte }, error) {
	var out struct{ json, svg []byte }
	c, err := chartsvg.Layout(machine.Describe())
	if err != nil {
		return out, fmt.Errorf("dashboard: chart: %w", err)
	}
	if out.json, err = json.Marshal(c); err != nil {
		return out, fmt.Errorf("dashboard: chart: %w", err)
	}
	out.svg = c.SVG()
	return out, nil
})

// New validates cfg and places the chart from the machine's graph.
func New(cfg Config) (*Dashboard, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	chart, err := drawnChart()
	if err != nil {
		return nil, err
	}
	return &Dashboard{
		cfg:       cfg,
		chartJSON: chart.json,
		svg:       chart.svg,
		red:       newRedactor(append([]string{cfg.AdminToken}, cfg.Secrets...)...),
		hub:       newHub(cfg.MaxStreams, cfg.MaxStreamsPerClient, cfg.AdminStreams),
		kick:      make(chan struct{}, 1),
	}, nil
}

// Handler serves, relative to where it is mounted (at "/", or under a
// prefix with http.StripPrefix):
//
//	GET  /                      the page
//	GET  /assets/...            its script, stylesheet and icon
//	GET  /chart.svg             the state chart
//	GET  /api/chart             the chart model (JSON)
//	GET  /api/info              {"actions": bool}
//	GET  /api/snapshot          one snapshot (JSON)
//	GET  /events                snapshots as Server-Sent Events
//	POST /api/auth              204 when the bearer token is right
//	POST /api/stepdown?token=N  the leadership with fencing token N steps
//	                            down (&partition=P: required with partitions)
//	POST /api/queue/pause       the queue pauses
//	POST /api/queue/resume      the queue resumes
//	POST /api/deadletters/{id}/requeue
//
// The POST endpoints exist only when actions are on (see Config.Actions).
func (d *Dashboard) Handler() http.Handler {
	static, _ := fs.Sub(assets, "assets") // cannot fail: the directory is embedded
	mux := http.NewServeMux()
	// {file}: one file, never a directory listing.
	mux.Handle("GET /assets/{file}", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /chart.svg", serveBytes("image/svg+xml", d.svg))
	mux.HandleFunc("GET /api/chart", serveBytes("application/json", d.chartJSON))
	mux.HandleFunc("GET /api/info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"actions": d.cfg.actionsOn()})
	})
	mux.HandleFunc("GET /api/snapshot", d.serveSnapshot)
	mux.HandleFunc("GET /events", d.serveEvents)
	if d.cfg.actionsOn() {
		d.mountActions(mux)
	}
	return secureHeaders(mux)
}

// secureHeaders sets what every response carries. The page loads only its
// own script and stylesheet, so the policy forbids inline script and style.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

func serveBytes(contentType string, b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}

// serveSnapshot answers the snapshot: errors in full for a request that
// bears the admin token, as their classes for anyone else.
func (d *Dashboard) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	v, err := d.latest(context.WithoutCancel(r.Context())) // shared: not ended by one reader leaving
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": unavailable})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(v.of(d.bearsAdminToken(r)))
}

// unavailable is all a client learns of a Source error: the error itself
// may quote an address or a credential, so it is only logged.
const unavailable = "data source unavailable"

// latest is the shared snapshot, encoded and redacted. The Source is read
// again only once the last read is invalidated (Run: a change notice, an
// action, the refresh period) or older than RefreshInterval (a failed
// read: MinInterval), and then once for all the readers that ask
// meanwhile, whatever their number: a request's reader passes a context
// that its leaving does not cancel, as the others wait on its read.
func (d *Dashboard) latest(ctx context.Context) (views, error) {
	d.mu.Lock()
	c, gen := d.cache, d.gen
	d.mu.Unlock()
	keep := d.cfg.RefreshInterval
	if c.err != nil {
		keep = d.cfg.MinInterval
	}
	if !c.at.IsZero() && c.gen == gen && time.Since(c.at) < keep {
		return c.data, c.err
	}
	v, err, _ := d.reads.Do("", func() (any, error) {
		b, err := d.snapshotJSON(ctx)
		d.mu.Lock()
		d.cache = cached{data: b, err: err, at: time.Now(), gen: gen}
		d.mu.Unlock()
		return b, err
	})
	b, _ := v.(views)
	return b, err
}

// invalidate makes the next latest read the Source again.
func (d *Dashboard) invalidate() {
	d.mu.Lock()
	d.gen++
	d.mu.Unlock()
}

// snapshotJSON reads one snapshot and encodes both its views, redacted.
func (d *Dashboard) snapshotJSON(parent context.Context) (views, error) {
	ctx, cancel := context.WithTimeout(parent, d.cfg.SnapshotTimeout)
	defer cancel()
	s, err := d.cfg.Source.Snapshot(ctx)
	if err != nil {
		if parent.Err() == nil { // not a client that went away
			d.cfg.Logger.Warn("dashboard snapshot failed", "err", d.red.text(err.Error()))
		}
		return views{}, err
	}
	s.ReadAt = time.Now()
	s = s.normalized()
	var v views
	if v.admin, err = d.red.json(s); err == nil {
		v.public, err = d.red.json(s.public())
	}
	return v, err
}

// Run pushes a snapshot to every /events stream when the Source says
// something changed, when an action succeeded, and every RefreshInterval;
// never twice within MinInterval, and not at all while nobody listens.
// It returns nil when ctx is done, and then ends every stream.
func (d *Dashboard) Run(ctx context.Context) error {
	if !d.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	defer d.hub.close()
	changes := d.cfg.Source.Changes()
	refresh := time.NewTicker(d.cfg.RefreshInterval)
	defer refresh.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
		case <-d.kick:
		case <-refresh.C:
		}
		if !backoff.Sleep(ctx, time.Until(last.Add(d.cfg.MinInterval))) {
			return nil
		}
		drain(changes) // notices that came while waiting are this push's
		drain(d.kick)
		d.invalidate()
		last = time.Now()
		if d.hub.count() > 0 {
			d.hub.broadcast(d.event(ctx, false), d.event(ctx, true))
		}
	}
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// requestPush asks Run for a push soon; it never blocks.
func (d *Dashboard) requestPush() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
