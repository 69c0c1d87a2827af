package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// keyRequest is the body of POST /api/keys/retry and /api/keys/skip: the
// parked key by its key or its failing job's ID (both: both must
// match), and for a skip, why.
type keyRequest struct {
	Key    string `json:"key"`
	JobID  string `json:"jobId"`
	Reason string `json:"reason"`
}

// Bounds of a key request: its body, and a skip's reason (kept in the
// dead letter and the history).
const (
	maxKeyBody   = 64 << 10
	maxSkipWhy   = 1024
	fromThisPage = "dashboard" // the page's X-Lockworker-Client header
)

// keyAction is POST /api/keys/retry or /api/keys/skip (op): 200 with
// the job's ID, 400 for a body that names no key, 404 when the key is
// not parked. A skip is recorded as by "dashboard (address)" when the
// page sent it (X-Lockworker-Client: dashboard), else "api (address)".
func (d *Dashboard) keyAction(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, msg := readKeyRequest(w, r, op)
		if msg != "" {
			d.audit(r, op, errors.New(msg))
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		defer cancel()
		var id string
		var err error
		if op == "retry" {
			id, err = d.cfg.Actions.RetryKey(ctx, in.Key, in.JobID)
		} else {
			id, err = d.cfg.Actions.SkipKey(ctx, in.Key, in.JobID, requester(r), in.Reason)
		}
		d.audit(r, op, err, "key", in.Key, "jobId", cmp.Or(id, in.JobID), "reason", in.Reason)
		switch {
		case errors.Is(err, ErrNotFound):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": d.red.text(fmt.Sprintf("%s failed: %s is not parked", op, name(in)))})
			return
		case err != nil && id == "":
			d.actionError(w, op, err)
			return
		}
		d.requestPush()
		out := map[string]string{"id": id}
		if err != nil { // done; its record was not
			out["warning"] = d.red.text(err.Error())
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// readKeyRequest decodes a key request, or says what is wrong with it.
func readKeyRequest(w http.ResponseWriter, r *http.Request, op string) (keyRequest, string) {
	var in keyRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxKeyBody))
	dec.DisallowUnknownFields()
	switch err := dec.Decode(&in); {
	case err != nil:
		return in, "the body is no key request (JSON: key or jobId, and for a skip reason): " + err.Error()
	case in.Key == "" && in.JobID == "":
		return in, "say which parked key: {\"key\": K} or {\"jobId\": ID} (lockworker parked lists them)"
	case in.JobID != "" && !jobID.MatchString(in.JobID):
		return in, "jobId: not a job ID"
	case op == "retry" && in.Reason != "":
		return in, "reason: a retry takes none (a skip does)"
	case len(in.Reason) > maxSkipWhy:
		return in, "reason: at most " + strconv.Itoa(maxSkipWhy) + " bytes"
	}
	return in, ""
}

// requester is who a skip is recorded as done by: the page or the API,
// and the address it came from (the admin token is shared).
func requester(r *http.Request) string {
	if r.Header.Get("X-Lockworker-Client") == fromThisPage {
		return "dashboard (" + r.RemoteAddr + ")"
	}
	return "api (" + r.RemoteAddr + ")"
}

// name is the parked key a request names, for people.
func name(in keyRequest) string {
	if in.Key != "" {
		return "key " + strconv.Quote(in.Key)
	}
	return "the key of job " + in.JobID
}
