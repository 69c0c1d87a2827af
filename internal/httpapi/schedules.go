package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/lockworker/lockworker/internal/bearer"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/schedule"
)

// Schedules is what /api/schedules needs of the queue (jobs.Router).
type Schedules interface {
	AddSchedule(ctx context.Context, s jobs.Schedule) error
	RemoveSchedule(ctx context.Context, name string) error
	Schedules(ctx context.Context) ([]figures.Schedule, error)
}

var _ Schedules = (*jobs.Router)(nil)

// scheduleTimeout bounds one /api/schedules call to Redis.
const scheduleTimeout = 5 * time.Second

// newSchedule is the body of POST /api/schedules: every (a Go duration)
// or cron and tz, the ticks' key and payload (text), catchUp once or
// skip (default once).
type newSchedule struct {
	Name    string `json:"name"`
	Every   string `json:"every"`
	Cron    string `json:"cron"`
	TZ      string `json:"tz"`
	Key     string `json:"key"`
	Payload string `json:"payload"`
	CatchUp string `json:"catchUp"`
}

// mountSchedules serves the schedules, with the admin token:
//
//	GET    /api/schedules         every schedule, its last and next tick (JSON)
//	POST   /api/schedules         add one (newSchedule): 201 with it, 409 when the name is taken
//	DELETE /api/schedules/{name}  remove one: 204, 404 when there is none
func (s *server) mountSchedules(mux *http.ServeMux) {
	mux.Handle("GET /api/schedules", s.admin(s.listSchedules))
	mux.Handle("POST /api/schedules", s.admin(s.addSchedule))
	mux.Handle("DELETE /api/schedules/{name}", s.admin(s.removeSchedule))
}

// admin lets a request through only with the admin token (compared in
// constant time); otherwise 401.
func (s *server) admin(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearer.Authorized(r, s.cfg.AdminToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockworker"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong admin token"})
			return
		}
		next(w, r)
	})
}

func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), scheduleTimeout)
	defer cancel()
	list, err := s.cfg.Schedules.Schedules(ctx)
	if err != nil {
		s.cfg.Logger.Error("list schedules failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not read the schedules: Redis unavailable"})
		return
	}
	if list == nil {
		list = []figures.Schedule{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) addSchedule(w http.ResponseWriter, r *http.Request) {
	var in newSchedule
	dec := json.NewDecoder(io.LimitReader(r.Body, 2*jobs.MaxPayload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body is no schedule (JSON: name, every or cron and tz, key, payload, catchUp): " + err.Error()})
		return
	}
	sc, bad := in.schedule()
	if bad == "" {
		if _, err := jobs.CheckSchedule(sc); err != nil {
			bad = reason(err)
		}
	}
	if bad != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), scheduleTimeout)
	defer cancel()
	switch err := s.cfg.Schedules.AddSchedule(ctx, sc); {
	case errors.Is(err, jobs.ErrScheduleExists):
		writeJSON(w, http.StatusConflict, map[string]string{"error": "a schedule named " + sc.Name + " exists; remove it first"})
		return
	case err != nil:
		s.cfg.Logger.Error("add schedule failed", "schedule", sc.Name, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not add the schedule: Redis unavailable"})
		return
	}
	list, _ := s.cfg.Schedules.Schedules(ctx)
	for _, f := range list {
		if f.Name == sc.Name {
			writeJSON(w, http.StatusCreated, f)
			return
		}
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": sc.Name})
}

// schedule is the schedule the body describes; bad says what is wrong
// with its every or catchUp.
func (in newSchedule) schedule() (jobs.Schedule, string) {
	sc := jobs.Schedule{Name: in.Name, When: schedule.When{Cron: in.Cron, TZ: in.TZ}, Key: in.Key, Payload: []byte(in.Payload)}
	if in.Every != "" {
		d, err := time.ParseDuration(in.Every)
		if err != nil {
			return sc, "every: not a duration such as 90s or 1h"
		}
		sc.Every = d
	}
	if in.CatchUp != "" {
		c, err := schedule.ParseCatchUp(in.CatchUp)
		if err != nil {
			return sc, "catchUp must be once or skip"
		}
		sc.CatchUp = c
	}
	return sc, ""
}

func (s *server) removeSchedule(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), scheduleTimeout)
	defer cancel()
	name := r.PathValue("name")
	switch err := s.cfg.Schedules.RemoveSchedule(ctx, name); {
	case errors.Is(err, jobs.ErrNoSchedule):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no schedule is named " + name})
	case err != nil:
		s.cfg.Logger.Error("remove schedule failed", "schedule", name, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not remove the schedule: Redis unavailable"})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
