package main

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// The headers lockworker's http handler sends with every job.
const (
	headerJobID   = "Lockworker-Job-Id"
	headerAttempt = "Lockworker-Attempt"
	headerToken   = "Lockworker-Fencing-Token"
	headerWorker  = "Lockworker-Worker-Id"
	headerPart    = "Lockworker-Partition" // absent without partitions: 0
	// headerFence is this store's answer: the fence of the request's
	// partition after the request.
	headerFence = "Lockworker-Fence"
)

// maxPayload is lockworker's own bound on a job's payload.
const maxPayload = 1 << 20

// handler serves the store:
//
//	POST /jobs   apply the job's write: 200 when applied, 409 when its
//	             fencing token is below the fence, 400 for a request
//	             without a job ID or a token, 401 without the bearer token
//	             (when FENCEDSTORE_TOKEN is set), 413 above 1 MiB, 503
//	             when the data file cannot be written
//	GET  /data   everything the store holds, as JSON
//	GET  /healthz 200
func handler(s *Store, token string, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		if token != "" && !bearer(r, token) {
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		wr, status, msg := parse(w, r)
		if status != 0 {
			http.Error(w, msg, status)
			return
		}
		fence, err := s.Apply(wr)
		w.Header().Set(headerFence, strconv.FormatInt(fence, 10))
		switch {
		case errors.Is(err, ErrStale):
			log.Warn("rejected a stale write", "job", wr.Job, "partition", wr.Partition, "token", wr.Token, "fence", fence, "worker", wr.Worker, "attempt", wr.Attempt)
			reply(w, http.StatusConflict, map[string]any{"error": "stale fencing token", "token": wr.Token, "fence": fence})
		case err != nil:
			log.Error("could not save the write", "job", wr.Job, "err", err)
			http.Error(w, "could not save the write", http.StatusServiceUnavailable)
		default:
			log.Info("applied", "job", wr.Job, "token", wr.Token, "worker", wr.Worker, "attempt", wr.Attempt)
			reply(w, http.StatusOK, map[string]any{"applied": true, "token": wr.Token, "fence": fence})
		}
	})
	mux.HandleFunc("GET /data", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, s.Snapshot())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// parse reads a job's write from its request, or says what is wrong with
// it (a 4xx: lockworker dead-letters the job).
func parse(w http.ResponseWriter, r *http.Request) (Write, int, string) {
	tok, err := strconv.ParseInt(r.Header.Get(headerToken), 10, 64)
	if err != nil || tok < 1 {
		return Write{}, http.StatusBadRequest, "missing or bad " + headerToken
	}
	id := r.Header.Get(headerJobID)
	if id == "" {
		return Write{}, http.StatusBadRequest, "missing " + headerJobID
	}
	part := 0
	if h := r.Header.Get(headerPart); h != "" {
		if part, err = strconv.Atoi(h); err != nil || part < 0 {
			return Write{}, http.StatusBadRequest, "bad " + headerPart
		}
	}
	attempt, _ := strconv.Atoi(r.Header.Get(headerAttempt))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return Write{}, http.StatusRequestEntityTooLarge, "payload above 1 MiB"
	}
	if err != nil {
		return Write{}, http.StatusBadRequest, "could not read the payload"
	}
	return Write{Job: id, Token: tok, Partition: part, Attempt: attempt, Worker: r.Header.Get(headerWorker), Payload: string(body)}, 0, ""
}

// bearer reports whether r carries "Authorization: Bearer <token>",
// compared in constant time.
func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
