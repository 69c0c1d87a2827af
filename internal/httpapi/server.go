package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
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
	Queue     *Queue `json:"queue,omitempty"`
}

// Queue holds the job queue figures in /status.
type Queue struct {
	Pending      int64  `json:"pending"`
	Committed    int64  `json:"committed"`
	DeadLettered int64  `json:"deadLettered"`
	Epoch        int64  `json:"epoch"`
	Error        string `json:"error,omitempty"`
}

// Config wires the handlers to the daemon.
type Config struct {
	// Status returns the current snapshot; required.
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
	Logger      *slog.Logger
}

// Handler returns the HTTP handler.
func Handler(cfg Config) http.Handler {
	if cfg.MaxJobBytes <= 0 {
		cfg.MaxJobBytes = 1 << 20
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil && !cfg.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		writeJSON(w, http.StatusOK, cfg.Status(ctx))
	})
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.JobsToken != "" && cfg.Enqueue != nil {
		mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
			if !authorized(r, cfg.JobsToken) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="lockworker"`)
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
				return
			}
			payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, cfg.MaxJobBytes))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "payload too large"})
					return
				}
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "could not read the body"})
				return
			}
			id, err := cfg.Enqueue(r.Context(), payload)
			if err != nil {
				if cfg.Logger != nil {
					cfg.Logger.Error("enqueue failed", "err", err)
				}
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not enqueue: Redis unavailable"})
				return
			}
			writeJSON(w, http.StatusAccepted, map[string]string{"id": id})
		})
	}
	return mux
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
