package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
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
	Queue     *Queue `json:"queue,omitempty"`
}

// Queue holds the job queue figures in /status.
type Queue struct {
	Pending      int64 `json:"pending"`
	Committed    int64 `json:"committed"`
	DeadLettered int64 `json:"deadLettered"`
	Epoch        int64 `json:"epoch"`
	// Paused says an operator paused the queue: the leader takes no new job.
	Paused bool `json:"paused"`
	// OldestPendingMs is how long the oldest pending job has waited.
	OldestPendingMs int64  `json:"oldestPendingMs"`
	Error           string `json:"error,omitempty"`
}

// Config wires the handlers to the daemon.
type Config struct {
	// Status returns the current snapshot. Required.
	Status func(ctx context.Context) Status
	// Ready reports whether the replica can take part in elections.
	Ready func() bool
	// Metrics serves /metrics; optional.
	Metrics http.Handler
	// Enqueue adds a job; with JobsToken it enables POST /jobs.
	Enqueue func(ctx context.Context, payload []byte) (string, error)
	// JobsToken is the bearer token POST /jobs requires; empty: no endpoint.
	JobsToken string
	// MaxJobBytes bounds a job payload; default 1 MiB.
	MaxJobBytes int64
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
	if cfg.MaxJobBytes < 0 {
		errs = append(errs, fmt.Errorf("httpapi: MaxJobBytes must not be negative, got %d", cfg.MaxJobBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.MaxJobBytes == 0 {
		cfg.MaxJobBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &server{cfg: cfg}
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

type server struct{ cfg Config }

func (s *server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Ready != nil && !s.cfg.Ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
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
	id, err := s.cfg.Enqueue(r.Context(), payload)
	if err != nil {
		s.cfg.Logger.Error("enqueue failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not enqueue: Redis unavailable"})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
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
