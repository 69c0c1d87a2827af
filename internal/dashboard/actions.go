package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/lockworker/lockworker/internal/bearer"
)

// Actions carries out what an operator asks for on the page. The daemon
// implements it; every call comes from a request that carried the admin
// token.
type Actions interface {
	// StepDown asks the leadership of partition p (0 without
	// partitions) whose fencing token is token to give up: stop work,
	// release the lock with the notice, and compete again. ErrNoLeader
	// when nobody leads; ErrEnded when that leadership has already ended
	// (nothing is asked of the one that followed it).
	StepDown(ctx context.Context, p int, token int64) error
	// Pause stops the leader from taking new jobs; the job in flight
	// finishes. Pausing a paused queue is not an error.
	Pause(ctx context.Context) error
	// Resume undoes Pause.
	Resume(ctx context.Context) error
	// Requeue moves the dead letter id back to the queue as a new job and
	// returns the new job's ID. ErrNotFound when id is not a dead letter.
	Requeue(ctx context.Context, id string) (newID string, err error)
	// RetryKey runs the failing job of a parked key again, with fresh
	// attempts; the key's held jobs follow it once it succeeds. The key
	// is named by key, or by its failing job's ID (jobID; the only way to
	// name keyless jobs); with both, both must match. It returns the
	// job's ID; ErrNotFound when no partition has that key parked.
	RetryKey(ctx context.Context, key, jobID string) (string, error)
	// SkipKey moves the failing job of a parked key (named as RetryKey's)
	// to the dead letters, recorded as skipped by by for reason, and
	// releases the key's held jobs in order. It returns the job's ID;
	// ErrNotFound when no partition has that key parked.
	SkipKey(ctx context.Context, key, jobID, by, reason string) (string, error)
}

// Errors an Actions implementation returns (wrapped is fine) to get a
// precise answer instead of 503.
var (
	ErrNotFound = errors.New("dashboard: not found")                 // 404
	ErrNoLeader = errors.New("dashboard: no leader")                 // 409
	ErrEnded    = errors.New("dashboard: that leadership has ended") // 409
	ErrInvalid  = errors.New("dashboard: invalid request")           // 400, e.g. a key no job can have
)

// actionTimeout bounds one action.
const actionTimeout = 10 * time.Second

// jobID is what a dead letter's ID may look like in a URL: a ULID today,
// anything short and plain tomorrow.
var jobID = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

func (d *Dashboard) mountActions(mux *http.ServeMux) {
	a := d.cfg.Actions
	mux.Handle("POST /api/auth", d.admin(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.Handle("POST /api/stepdown", d.admin(d.stepDown))
	mux.Handle("POST /api/queue/pause", d.admin(d.act("pause", a.Pause)))
	mux.Handle("POST /api/queue/resume", d.admin(d.act("resume", a.Resume)))
	mux.Handle("POST /api/deadletters/{id}/requeue", d.admin(d.requeue))
	mux.Handle("POST /api/keys/retry", d.admin(d.keyAction("retry")))
	mux.Handle("POST /api/keys/skip", d.admin(d.keyAction("skip")))
}

// admin lets a request through only with the admin token, compared in
// constant time; otherwise 401.
func (d *Dashboard) admin(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.bearsAdminToken(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockworker"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong admin token"})
			return
		}
		next(w, r)
	})
}

// bearsAdminToken: r carries the admin token (actions on), compared in
// constant time.
func (d *Dashboard) bearsAdminToken(r *http.Request) bool {
	return d.cfg.actionsOn() && bearer.Authorized(r, d.cfg.AdminToken)
}

func (d *Dashboard) act(name string, fn func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		defer cancel()
		err := fn(ctx)
		d.audit(r, name, err)
		if err != nil {
			d.actionError(w, name, err)
			return
		}
		d.requestPush()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	}
}

// stepDown is POST /api/stepdown?token=N[&partition=P]: the leadership
// it means is named by its fencing token (the page sends the one it
// shows), so a request repeated after that leadership ended does nothing;
// with partitions, the partition is required.
func (d *Dashboard) stepDown(w http.ResponseWriter, r *http.Request) {
	p, token, msg := d.stepDownArgs(r.URL.Query())
	if msg != "" {
		d.audit(r, "stepdown", errors.New(msg))
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
		return
	}
	d.act("stepdown", func(ctx context.Context) error { return d.cfg.Actions.StepDown(ctx, p, token) })(w, r)
}

// stepDownArgs reads a step-down's partition and token, or says what is
// wrong with them.
func (d *Dashboard) stepDownArgs(q url.Values) (p int, token int64, msg string) {
	n := d.cfg.Partitions
	token, err := strconv.ParseInt(q.Get("token"), 10, 64)
	if err != nil || token < 1 {
		return 0, 0, "token: name the leadership to step down by its fencing token, a number from 1 (?token=N)"
	}
	raw, given := q.Get("partition"), q.Has("partition")
	switch {
	case !given && n > 1:
		return 0, 0, fmt.Sprintf("partition: the fleet has %d partitions: say which with ?partition=P (0 to %d)", n, n-1)
	case !given:
		return 0, token, ""
	}
	if p, err = strconv.Atoi(raw); err != nil || p < 0 || p >= n {
		return 0, 0, fmt.Sprintf("partition: %q is not a partition of this fleet (0 to %d)", raw, n-1)
	}
	return p, token, ""
}

func (d *Dashboard) requeue(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !jobID.MatchString(id) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "not a job ID"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	newID, err := d.cfg.Actions.Requeue(ctx, id)
	d.audit(r, "requeue", err, "jobId", id, "newJobId", newID)
	if err != nil {
		d.actionError(w, "requeue", err)
		return
	}
	d.requestPush()
	writeJSON(w, http.StatusOK, map[string]string{"id": newID})
}

// audit logs every action once, with who asked (by address: the token is
// shared) and how it went.
func (d *Dashboard) audit(r *http.Request, name string, err error, attrs ...any) {
	attrs = append(attrs, "action", name, "remoteAddr", r.RemoteAddr)
	if err != nil {
		d.cfg.Logger.Warn("dashboard action failed", append(attrs, "err", d.red.text(err.Error()))...)
		return
	}
	d.cfg.Logger.Info("dashboard action", attrs...)
}

// actionError answers a failed action. The person asking holds the admin
// token, so the error is shown, redacted like everything else.
func (d *Dashboard) actionError(w http.ResponseWriter, name string, err error) {
	code := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrEnded):
		code = http.StatusConflict
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	}
	writeJSON(w, code, map[string]string{"error": d.red.text(fmt.Sprintf("%s failed: %v", name, err))})
}
