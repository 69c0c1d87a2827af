package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sync/semaphore"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/lines"
)

// Status is the body of GET /status.
type Status struct {
	WorkerID  string `json:"workerId"`
	State     string `json:"state"`
	Leader    bool   `json:"leader"`
	Token     int64  `json:"token"`
	LockKey   string `json:"lockKey"`
	LeaseLeft int64  `json:"leaseLeftMs"`
	Mode      string `json:"mode"`
	Nodes     int    `json:"redisNodes"`
	RedisOK   bool   `json:"redisOk"`
	Version   string `json:"version"`
	// Holder is who holds the lock, as Redis says (the lock value carries
	// the holder's worker ID and token): on a follower, who leads.
	Holder *Holder `json:"holder,omitempty"`
	Queue  *Queue  `json:"queue,omitempty"`
	// Partitions is the fleet's partition count (PARTITIONS).
	Partitions int `json:"partitions"`
	// Leads lists the partitions this replica leads, with their tokens,
	// when the fleet has more than one (State, Leader and Token then
	// speak of all of them: working and true when it leads any).
	Leads []LeadStatus `json:"leads,omitempty"`
	// Lanes lists this replica's lanes, one per partition, each with its
	// chart state and why it does not lead.
	Lanes []LaneStatus `json:"lanes"`
	// Eviction is each Redis master's maxmemory-policy as this replica
	// last read it. Safe false: a master evicts keys (or none has
	// answered yet), and this replica does not lead (/readyz says 503).
	Eviction *Eviction `json:"redisEviction,omitempty"`
	// Replicas, when set, is why no lease can be taken: a Redis master
	// has fewer online replicas than REDIS_MIN_REPLICAS asks, so no
	// fencing epoch bump is acknowledged there (/readyz says 503).
	Replicas *ReplicaShortage `json:"redisReplicas,omitempty"`
}

// ReplicaShortage is the masters short of replicas, in /status.
type ReplicaShortage struct {
	// Reason says what is short, and the two ways out.
	Reason  string          `json:"reason"`
	Masters []ReplicaMaster `json:"masters"`
}

// ReplicaMaster is one master short of replicas: how many it has online
// and how many REDIS_MIN_REPLICAS asks for.
type ReplicaMaster struct {
	Master         string `json:"master"`
	OnlineReplicas int    `json:"onlineReplicas"`
	MinReplicas    int    `json:"minReplicas"`
}

// Eviction is the Redis masters' eviction policies, in /status.
type Eviction struct {
	Safe bool `json:"safe"`
	// Reason says why not safe, and the fix.
	Reason string         `json:"reason,omitempty"`
	Nodes  []EvictionNode `json:"nodes"`
}

// EvictionNode is one master's maxmemory-policy ("" when never read),
// and the error of its last read, if it failed.
type EvictionNode struct {
	Node   string `json:"node"`
	Policy string `json:"policy,omitempty"`
	Error  string `json:"error,omitempty"`
}

// LeadStatus is one partition this replica leads, in /status.
type LeadStatus struct {
	Partition   int   `json:"partition"`
	Token       int64 `json:"token"`
	LeaseLeftMs int64 `json:"leaseLeftMs"`
}

// LaneStatus is one lane of this replica (one partition's leadership),
// in /status.
type LaneStatus struct {
	Partition int    `json:"partition"`
	State     string `json:"state"`
	// Token and LeaseLeftMs are the lease's while the lane leads; 0
	// otherwise.
	Token       int64 `json:"token"`
	LeaseLeftMs int64 `json:"leaseLeftMs"`
	// Reason says why the lane does not lead (who holds the lock, not
	// this replica's share, Redis evicts keys, a hold after a step-down,
	// ...); empty while it leads.
	Reason string `json:"reason"`
}

// Holder is the lock as Redis holds it, in /status: Held false when it is
// free, Error "unavailable" when Redis did not answer in time.
type Holder struct {
	Held     bool   `json:"held"`
	WorkerID string `json:"workerId,omitempty"`
	Token    int64  `json:"token,omitempty"`
	// LeaseLeftMs is how long the holder keeps the lock if it does not
	// renew (Redis's TTL of the key; with Redlock, of the quorum's keys).
	LeaseLeftMs int64  `json:"leaseLeftMs,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Queue is the job queue's figures in /status, or, when they could not be
// read in time, zeros and why.
type Queue struct {
	figures.Queue
	Error string `json:"error,omitempty"`
}

// Config wires the handlers to the daemon.
type Config struct {
	// Status returns the current snapshot. Required.
	Status func(ctx context.Context) Status
	// Ready is nil when the replica can take part in elections, else why
	// not (/readyz answers 503 with it as the reason).
	Ready func() error
	// Metrics serves /metrics; optional.
	Metrics http.Handler
	// Enqueue adds a job with an ordering key ("" for none); with
	// JobsToken it enables POST /jobs.
	Enqueue func(ctx context.Context, key string, payload []byte) (string, error)
	// EnqueueMany adds jobs all or none, in order, and returns their IDs
	// in that order (jobs.Queue.EnqueueMany): POST /jobs with
	// Content-Type application/x-ndjson. Required with JobsToken. An error
	// with a method OutcomeUnknown() returning true says the batch may
	// have been enqueued; any other, that nothing was.
	// keys[i] is payloads[i]'s ordering key ("" for none).
	EnqueueMany func(ctx context.Context, keys []string, payloads [][]byte) ([]string, error)
	// JobsToken is the bearer token POST /jobs requires; empty: no endpoint.
	JobsToken string
	// MaxJobBytes bounds a job payload, and a line of an NDJSON body;
	// default 1 MiB.
	MaxJobBytes int64
	// MaxBatchJobs bounds the jobs (non-empty lines) of an NDJSON body;
	// default 1000.
	MaxBatchJobs int
	// MaxBatchBytes bounds an NDJSON body; default 8 MiB.
	MaxBatchBytes int64
	// MaxBodyInFlight bounds the body bytes of POST /jobs being read and
	// enqueued at once, across requests: each request reserves its
	// Content-Length (or its route's bound when it has none) before it
	// reads; one that finds no room gets 503 with Retry-After. At least
	// MaxBatchBytes; default 32 MiB.
	MaxBodyInFlight int64
	// Dashboard, optional, serves everything the other routes do not: the
	// page at GET / and its API (package dashboard).
	Dashboard http.Handler
	// Logger receives failed enqueues. Default: discard.
	Logger *slog.Logger
}

// New validates cfg and returns the HTTP handler.
func New(cfg Config) (http.Handler, error) {
	var errs []error
	if cfg.Status == nil {
		errs = append(errs, errors.New("httpapi: Status is required"))
	}
	if cfg.JobsToken != "" && cfg.Enqueue == nil {
		errs = append(errs, errors.New("httpapi: JobsToken is set but Enqueue is nil"))
	}
	if cfg.JobsToken != "" && cfg.EnqueueMany == nil {
		errs = append(errs, errors.New("httpapi: JobsToken is set but EnqueueMany is nil"))
	}
	if cfg.MaxJobBytes < 0 || cfg.MaxBatchJobs < 0 || cfg.MaxBatchBytes < 0 || cfg.MaxBodyInFlight < 0 {
		errs = append(errs, fmt.Errorf("httpapi: MaxJobBytes, MaxBatchJobs, MaxBatchBytes and MaxBodyInFlight must not be negative, got %d, %d, %d and %d",
			cfg.MaxJobBytes, cfg.MaxBatchJobs, cfg.MaxBatchBytes, cfg.MaxBodyInFlight))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.MaxJobBytes == 0 {
		cfg.MaxJobBytes = 1 << 20
	}
	if cfg.MaxBatchJobs == 0 {
		cfg.MaxBatchJobs = 1000
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	if cfg.MaxBodyInFlight == 0 {
		cfg.MaxBodyInFlight = 32 << 20
	}
	if cfg.MaxBodyInFlight < max(cfg.MaxBatchBytes, cfg.MaxJobBytes) {
		return nil, fmt.Errorf("httpapi: MaxBodyInFlight (%d) is below the largest body (%d)", cfg.MaxBodyInFlight, max(cfg.MaxBatchBytes, cfg.MaxJobBytes))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
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
	if !authorized(r, s.cfg.JobsToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lockworker"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
		return
	}
	bound := s.cfg.MaxJobBytes
	if isNDJSON(r) {
		bound = s.cfg.MaxBatchBytes
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
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxJobBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "payload too large"})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the body"})
		return
	}
	if len(payload) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "empty payload: a job needs a body"})
		return
	}
	key := r.Header.Get(HeaderKey)
	if len(key) > maxKey {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": HeaderKey + " longer than 1024 bytes"})
		return
	}
	id, err := s.cfg.Enqueue(r.Context(), key, payload)
	if err != nil {
		s.cfg.Logger.Error("enqueue failed", "err", err)
		msg := "could not enqueue: Redis unavailable"
		switch {
		case redisFull(err):
			msg = fullMsg
		case notReplicated(err):
			msg = notReplicatedMsg
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": msg})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
}

// enqueueLines is POST /jobs with an NDJSON body: one job per line, each a
// JSON value, all enqueued or none. The whole body is read and checked
// first (lines.Read), so a bad line enqueues nothing.
func (s *server) enqueueLines(w http.ResponseWriter, r *http.Request) {
	payloads, err := lines.Read(r.Body, lines.Limits{
		MaxBytes: s.cfg.MaxBatchBytes, MaxLines: s.cfg.MaxBatchJobs, MaxLineBytes: int(s.cfg.MaxJobBytes),
	}, validJSON)
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
	keys, refused := lineKeys(r, payloads)
	if refused != nil {
		writeJSON(w, http.StatusBadRequest, refused)
		return
	}
	ids, err := s.cfg.EnqueueMany(r.Context(), keys, payloads)
	if err != nil {
		s.cfg.Logger.Error("enqueue failed", "jobs", len(payloads), "err", err)
		msg := "could not enqueue: Redis refused; nothing enqueued"
		switch {
		case outcomeUnknown(err):
			msg = "could not enqueue: Redis unavailable; the batch was enqueued whole or not at all"
		case redisFull(err):
			msg = fullMsg
		case notReplicated(err):
			msg = notReplicatedMsg
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": msg})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string][]string{"ids": ids})
}

// The headers that give jobs their ordering keys.
const (
	// HeaderKey is the ordering key of the job, or of every line of an
	// NDJSON body.
	HeaderKey = "Lockworker-Key"
	// HeaderKeyField names the top-level field of each NDJSON line whose
	// string value is that line's ordering key.
	HeaderKeyField = "Lockworker-Key-Field"
)

// maxKey is the longest ordering key (jobs.MaxKey, which this package
// cannot import).
const maxKey = 1024

// lineKeys are the ordering keys of an NDJSON body's lines: the
// Lockworker-Key header's for all of them, or each line's field named by
// Lockworker-Key-Field (a string of 1 to maxKey bytes; a line without it
// refuses the batch); none without either header. bad is the 400 answer.
func lineKeys(r *http.Request, payloads [][]byte) ([]string, map[string]any) {
	keys := make([]string, len(payloads))
	key, field := r.Header.Get(HeaderKey), r.Header.Get(HeaderKeyField)
	switch {
	case key != "" && field != "":
		return nil, map[string]any{"error": "give " + HeaderKey + " or " + HeaderKeyField + ", not both; nothing enqueued"}
	case len(key) > maxKey:
		return nil, map[string]any{"error": HeaderKey + " longer than 1024 bytes; nothing enqueued"}
	case key != "":
		for i := range keys {
			keys[i] = key
		}
	case field != "":
		for i, p := range payloads {
			var obj map[string]json.RawMessage
			var k string
			if json.Unmarshal(p, &obj) != nil || json.Unmarshal(obj[field], &k) != nil || k == "" || len(k) > maxKey ||
				strings.ContainsFunc(k, unicode.IsControl) {
				return nil, map[string]any{"error": fmt.Sprintf("job %d: no string field %q of 1 to 1024 bytes without control characters for its key; nothing enqueued", i+1, field), "job": i + 1}
			}
			keys[i] = k
		}
	}
	return keys, nil
}

// outcomeUnknown: EnqueueMany's error says the batch may have been
// enqueued (jobs.ErrOutcomeUnknown, which this package cannot import:
// jobs' tests use packages that import this one).
func outcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	return errors.As(err, &u) && u.OutcomeUnknown()
}

// fullMsg is the 503's message when Redis is out of memory.
const fullMsg = "could not enqueue: Redis is full (maxmemory reached; it refuses writes rather than evict); nothing enqueued"

// redisFull: the enqueue's error says Redis refused it for memory
// (jobs.ErrRedisFull, found by its method as outcomeUnknown is).
func redisFull(err error) bool {
	var f interface{ RedisFull() bool }
	return errors.As(err, &f) && f.RedisFull()
}

// notReplicatedMsg is the 503's message when the write reached the master
// but too few replicas acknowledged it in time.
const notReplicatedMsg = "not acknowledged: written on the Redis master, but fewer replicas than REDIS_MIN_REPLICAS " +
	"acknowledged it in time; it may run, or be lost in a failover"

// notReplicated: the enqueue's error is jobs.ErrNotReplicated.
func notReplicated(err error) bool {
	var f interface{ NotReplicated() bool }
	return errors.As(err, &f) && f.NotReplicated()
}

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

func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
