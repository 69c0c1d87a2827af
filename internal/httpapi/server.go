package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/lockworker/lockworker/internal/bearer"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/lines"
	"github.com/lockworker/lockworker/internal/statusdoc"
)

// Config wires the handlers to the daemon.
type Config struct {
	// Status returns the current snapshot. Required.
	Status func(ctx context.Context) statusdoc.Status
	// Ready is nil when the replica can take part in elections, else why
	// not (/readyz answers 503 with it as the reason).
	Ready func() error
	// Metrics serves /metrics; optional.
	Metrics http.Handler
	// Enqueue adds a job, maybe delayed or with an idempotency key
	// (jobs.Router.EnqueueItem); with JobsToken it enables POST /jobs.
	Enqueue func(ctx context.Context, it jobs.Item) (jobs.Receipt, error)
	// EnqueueMany adds jobs all or none, in order, and returns their
	// receipts in that order (jobs.Router.EnqueueItems): POST /jobs with
	// Content-Type application/x-ndjson. Required with JobsToken.
	EnqueueMany func(ctx context.Context, items []jobs.Item) ([]jobs.Receipt, error)
	// AdminToken, with Schedules, enables /api/schedules (add, list,
	// remove) for requests that bear it. Empty: no such routes.
	AdminToken string
	// Schedules stores the schedules (jobs.Router).
	Schedules Schedules
	// JobsToken is the bearer token POST /jobs requires; empty: no
	// endpoint. Otherwise at least bearer.MinLen bytes, without spaces or
	// control characters (bearer.Check).
	JobsToken string
	// MaxBodyInFlight bounds the body bytes of POST /jobs being read and
	// enqueued at once, across requests: each request reserves its
	// Content-Length (or its route's bound, jobs.MaxPayload or
	// jobs.MaxBatchBytes, when it has none) before it reads; one that finds
	// no room gets 503 with Retry-After. At least jobs.MaxBatchBytes;
	// default 32 MiB.
	MaxBodyInFlight int64
	// Dashboard, optional, serves everything the other routes do not: the
	// page at GET / and its API (package dashboard).
	Dashboard http.Handler
	// Logger receives failed enqueues. Default: discard.
	Logger *slog.Logger
}

// DefaultMaxBodyInFlight is Config.MaxBodyInFlight's default.
const DefaultMaxBodyInFlight = 32 << 20

// validate reports every bad field at once and fills the defaults.
func (c *Config) validate() error {
	var errs []error
	if c.Status == nil {
		errs = append(errs, errors.New("httpapi: Status is required"))
	}
	if c.JobsToken != "" {
		if err := bearer.Check(c.JobsToken); err != nil {
			errs = append(errs, fmt.Errorf("httpapi: JobsToken: %w", err))
		}
	}
	if c.JobsToken != "" && c.Enqueue == nil {
		errs = append(errs, errors.New("httpapi: JobsToken is set but Enqueue is nil"))
	}
	if c.JobsToken != "" && c.EnqueueMany == nil {
		errs = append(errs, errors.New("httpapi: JobsToken is set but EnqueueMany is nil"))
	}
	if c.AdminToken != "" {
		if err := bearer.Check(c.AdminToken); err != nil {
			errs = append(errs, fmt.Errorf("httpapi: AdminToken: %w", err))
		}
	}
	if c.MaxBodyInFlight == 0 {
		c.MaxBodyInFlight = DefaultMaxBodyInFlight
	}
	if c.MaxBodyInFlight < jobs.MaxBatchBytes {
		errs = append(errs, fmt.Errorf("httpapi: MaxBodyInFlight (%d) is below the largest body (%d)", c.MaxBodyInFlight, jobs.MaxBatchBytes))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

// New validates cfg and returns the HTTP handler.
func New(cfg Config) (http.Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, bodies: semaphore.NewWeighted(cfg.MaxBodyInFlight)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /status", s.status)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.JobsToken != "" {
		mux.HandleFunc("POST /jobs", s.enqueue)
	}
	if cfg.AdminToken != "" && cfg.Schedules != nil {
		s.mountSchedules(mux)
	}
	if cfg.Dashboard != nil {
		mux.Handle("/", cfg.Dashboard)
	}
	return mux, nil
}

type server struct {
	cfg    Config
	bodies *semaphore.Weighted // body bytes in flight (MaxBodyInFlight)
}

func (s *server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	writeJSON(w, http.StatusOK, s.cfg.Status(ctx))
}

func (s *server) enqueue(w http.ResponseWriter, r *http.Request) {
	if !bearer.Authorized(r, s.cfg.JobsToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lockworker"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
		return
	}
	bound := int64(jobs.MaxPayload)
	if isNDJSON(r) {
		bound = jobs.MaxBatchBytes
	}
	if r.ContentLength >= 0 && r.ContentLength < bound {
		bound = r.ContentLength // a longer body is cut there by net/http
	}
	if !s.bodies.TryAcquire(bound) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close") // its unread body is not drained
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many request bodies in flight; retry later"})
		return
	}
	defer s.bodies.Release(bound)
	if isNDJSON(r) {
		s.enqueueLines(w, r)
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, jobs.MaxPayload))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": reason(jobs.ErrPayloadTooLarge)})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the body"})
		return
	}
	it, bad := headerItem(r)
	if bad != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad})
		return
	}
	it.Payload = payload
	if err := jobs.CheckItem(it); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": reason(err) + "; nothing enqueued"})
		return
	}
	rc, err := s.cfg.Enqueue(r.Context(), it)
	if err != nil {
		s.refused(w, err, 1, "could not enqueue: Redis unavailable")
		return
	}
	code := http.StatusAccepted
	if rc.Existing {
		code = http.StatusOK // the job of that idempotency key stands for it
	}
	writeJSON(w, code, map[string]string{"id": rc.ID})
}

// headerItem is what the headers of POST /jobs say of a job: its key
// (headerKey), its due time (Lockworker-Not-Before) and its idempotency
// key. bad is the 400's message when one is refused.
func headerItem(r *http.Request) (it jobs.Item, bad string) {
	if it.Key, bad = headerKey(r); bad != "" {
		return it, bad
	}
	if it.NotBefore, bad = headerTime(r); bad != "" {
		return it, bad
	}
	if vs, ok := r.Header[HeaderIdempotencyKey]; ok {
		if len(vs) > 1 || jobs.CheckIdempotencyKey(vs[0]) != nil {
			return it, HeaderIdempotencyKey + ": " + reason(jobs.ErrIdempotencyKeyInvalid) + ", or given more than once; nothing enqueued"
		}
		it.IdempotencyKey = vs[0]
	}
	return it, ""
}

// headerTime is the Lockworker-Not-Before header's time: zero without
// it. bad is the 400's message when it is refused.
func headerTime(r *http.Request) (time.Time, string) {
	vs, ok := r.Header[HeaderNotBefore]
	if !ok {
		return time.Time{}, ""
	}
	t, err := time.Parse(time.RFC3339Nano, vs[0])
	if len(vs) > 1 || err != nil {
		return time.Time{}, HeaderNotBefore + ": not one RFC 3339 time (such as 2026-03-01T02:00:00Z); nothing enqueued"
	}
	return t, ""
}

// enqueueLines is POST /jobs with an NDJSON body: one job per line, each a
// JSON value, all enqueued or none. The whole body is read and checked
// first (lines.Read, jobs.Keyed), so a bad line enqueues nothing.
func (s *server) enqueueLines(w http.ResponseWriter, r *http.Request) {
	payloads, err := lines.Read(r.Body, jobs.BatchLines(), validJSON)
	var bad *lines.Error
	switch {
	case errors.As(err, &bad):
		code, body := http.StatusBadRequest, map[string]any{"error": bad.Error() + "; nothing enqueued"}
		if errors.Is(err, lines.ErrTooLarge) || errors.Is(err, lines.ErrTooMany) || errors.Is(err, lines.ErrTooLong) {
			code = http.StatusRequestEntityTooLarge
		}
		if bad.Line > 0 {
			body["line"] = bad.Line
		}
		writeJSON(w, code, body)
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the body; nothing enqueued"})
		return
	}
	f, refused := lineFields(r)
	if refused != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": refused})
		return
	}
	items, err := jobs.ItemsOf(payloads, f)
	if err == nil {
		var rs []jobs.Receipt
		if rs, err = s.cfg.EnqueueMany(r.Context(), items); err == nil {
			code, body := batchAnswer(rs)
			writeJSON(w, code, body)
			return
		}
	}
	s.refused(w, err, len(payloads), "could not enqueue: Redis refused; nothing enqueued")
}

// batchAnswer is the answer to an NDJSON enqueue that returned rs: the
// IDs, and the jobs (from 1) whose idempotency key an earlier job held;
// 202, or 200 when no job was enqueued (every one such a duplicate).
func batchAnswer(rs []jobs.Receipt) (int, any) {
	body := struct {
		IDs      []string `json:"ids"`
		Existing []int    `json:"existing,omitempty"`
	}{IDs: make([]string, len(rs))}
	for i, rc := range rs {
		body.IDs[i] = rc.ID
		if rc.Existing {
			body.Existing = append(body.Existing, i+1)
		}
	}
	if len(body.Existing) == len(rs) {
		return http.StatusOK, body
	}
	return http.StatusAccepted, body
}

// lineFields is what the headers of an NDJSON POST /jobs say of every
// line: a key or a key field, a due time or a due-time field, an
// idempotency-key field. bad is the 400's message when they are refused.
func lineFields(r *http.Request) (f jobs.LineFields, bad string) {
	if f.Key, bad = headerKey(r); bad != "" {
		return f, bad
	}
	if f.NotBefore, bad = headerTime(r); bad != "" {
		return f, bad
	}
	for _, h := range []struct {
		name string
		to   *string
	}{{HeaderKeyField, &f.KeyField}, {HeaderNotBeforeField, &f.NotBeforeField}, {HeaderIdempotencyKeyField, &f.IdempotencyKeyField}} {
		if vs, ok := r.Header[h.name]; ok {
			if len(vs) != 1 || vs[0] == "" {
				return f, h.name + " must name one field; nothing enqueued"
			}
			*h.to = vs[0]
		}
	}
	switch {
	case f.Key != "" && f.KeyField != "":
		return f, "give " + HeaderKey + " or " + HeaderKeyField + ", not both; nothing enqueued"
	case !f.NotBefore.IsZero() && f.NotBeforeField != "":
		return f, "give " + HeaderNotBefore + " or " + HeaderNotBeforeField + ", not both; nothing enqueued"
	case r.Header.Get(HeaderIdempotencyKey) != "":
		return f, HeaderIdempotencyKey + " would make every line one job: give each line its own with " +
			HeaderIdempotencyKeyField + "; nothing enqueued"
	}
	return f, ""
}

// The headers that say what POST /jobs enqueues besides the payloads.
const (
	// HeaderKey is the ordering key of the job, or of every line of an
	// NDJSON body.
	HeaderKey = "Lockworker-Key"
	// HeaderKeyField names the top-level field of each NDJSON line whose
	// string value is that line's ordering key.
	HeaderKeyField = "Lockworker-Key-Field"
	// HeaderNotBefore delays the job, or every line's (RFC 3339): it
	// joins its key's order then.
	HeaderNotBefore = "Lockworker-Not-Before"
	// HeaderNotBeforeField names the field of each NDJSON line that holds
	// its due time (RFC 3339).
	HeaderNotBeforeField = "Lockworker-Not-Before-Field"
	// HeaderIdempotencyKey makes the enqueue of one job safe to retry:
	// while a job of its partition holds the key, POST /jobs enqueues
	// nothing and answers 200 with that job's ID.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderIdempotencyKeyField names the field of each NDJSON line that
	// holds its idempotency key (a line without it has none).
	HeaderIdempotencyKeyField = "Idempotency-Key-Field"
)

// headerKey is the Lockworker-Key header's ordering key: "" without the
// header; a key given is checked as every key is (jobs.CheckKey), even
// an empty one (an unset variable in a script must not silently drop
// the job's order). bad is the 400's message when it is refused.
func headerKey(r *http.Request) (key, bad string) {
	vs, ok := r.Header[HeaderKey]
	switch {
	case !ok:
		return "", ""
	case len(vs) > 1:
		return "", HeaderKey + " given more than once; nothing enqueued"
	}
	if err := jobs.CheckKey(vs[0]); err != nil {
		return "", HeaderKey + ": " + reason(err) + " (leave the header out for jobs without a key); nothing enqueued"
	}
	return vs[0], ""
}

// refused answers an enqueue of n jobs that returned err: 400 with the
// reason for input the queue refuses (and the job, for a batch's), else
// 503 saying what Redis did (fallback when it says nothing more).
func (s *server) refused(w http.ResponseWriter, err error, n int, fallback string) {
	if errors.Is(err, jobs.ErrInvalidInput) {
		body := map[string]any{"error": reason(err) + "; nothing enqueued"}
		var be *jobs.BatchError
		if errors.As(err, &be) {
			body["job"] = be.Index + 1
		}
		writeJSON(w, http.StatusBadRequest, body)
		return
	}
	s.cfg.Logger.Error("enqueue failed", "jobs", n, "err", err)
	msg := fallback
	switch {
	case errors.Is(err, jobs.ErrOutcomeUnknown):
		msg = "could not enqueue: Redis unavailable; the batch was enqueued whole or not at all"
	case errors.Is(err, jobs.ErrRedisFull):
		msg = "could not enqueue: Redis is full (maxmemory reached; it refuses writes rather than evict); nothing enqueued"
	case errors.Is(err, jobs.ErrNotReplicated):
		msg = "not acknowledged: written on the Redis master, but fewer replicas than REDIS_MIN_REPLICAS " +
			"acknowledged it in time; it may run, or be lost in a failover; with REDIS_MIN_REPLICAS of 1 or more a retry with the same Idempotency-Key enqueues it once"
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": msg})
}

// reason is a refusal's message for a client: the queue's words without
// the package's name.
func reason(err error) string { return strings.TrimPrefix(err.Error(), "jobs: ") }

// isNDJSON: the body is newline-delimited JSON, one job per line.
func isNDJSON(r *http.Request) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == "application/x-ndjson"
}

// validJSON refuses a line that is not one JSON value, with the decoder's
// reason (json.Valid is the fast path, Unmarshal only says why).
func validJSON(line []byte) error {
	if json.Valid(line) {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return errors.New("not JSON")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
