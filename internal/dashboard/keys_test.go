package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestKeyActions: POST /api/keys/retry and /api/keys/skip take the key
// (or its failing job) as JSON and reach Actions with it; a skip carries
// its reason and who asked (the page, or the API, with the address); a
// body that names no key, or names it badly, is 400 and reaches nothing;
// a key not parked is 404 with an error that names it.
func TestKeyActions(t *testing.T) {
	d, _, acts := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	post := func(path, body string, page bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
		r.RemoteAddr = "192.0.2.7:5150"
		if page {
			r.Header.Set("X-Lockworker-Client", "dashboard")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		path, body string
		page       bool
		code       int
		call       string
	}{
		{"/api/keys/retry", `{"key":"acct-1"}`, false, http.StatusOK, "retry:acct-1:"},
		{"/api/keys/retry", `{"jobId":"01JDPARKED0000000000000000"}`, true, http.StatusOK, "retry::01JDPARKED0000000000000000"},
		{"/api/keys/skip", `{"key":"acct-1","reason":"bad data upstream"}`, true, http.StatusOK,
			"skip:acct-1::dashboard (192.0.2.7:5150):bad data upstream"},
		{"/api/keys/skip", `{"key":"acct-2"}`, false, http.StatusOK, "skip:acct-2::api (192.0.2.7:5150):"},
		{"/api/keys/retry", `{}`, false, http.StatusBadRequest, ""},
		{"/api/keys/skip", ``, false, http.StatusBadRequest, ""},
		{"/api/keys/skip", `{"key":"a","why":"x"}`, false, http.StatusBadRequest, ""},
		{"/api/keys/skip", `{"jobId":"a b"}`, false, http.StatusBadRequest, ""},
		{"/api/keys/retry", `{"key":"a","reason":"x"}`, false, http.StatusBadRequest, ""},
		{"/api/keys/skip", `{"key":"a","reason":"` + strings.Repeat("x", maxSkipWhy+1) + `"}`, false, http.StatusBadRequest, ""},
	} {
		before := len(acts.calls())
		w := post(tc.path, tc.body, tc.page)
		calls := acts.calls()[before:]
		if w.Code != tc.code || (tc.call == "" && len(calls) > 0) || (tc.call != "" && fmt.Sprint(calls) != "["+tc.call+"]") {
			t.Errorf("POST %s %.60s: %d %s, calls %v; want %d, call %q", tc.path, tc.body, w.Code, strings.TrimSpace(w.Body.String()),
				calls, tc.code, tc.call)
		}
		if tc.code == http.StatusOK && strings.TrimSpace(w.Body.String()) != `{"id":"01JDPARKED0000000000000000"}` {
			t.Errorf("POST %s: body %s, want the job's ID", tc.path, w.Body)
		}
		if tc.code == http.StatusBadRequest && !strings.Contains(w.Body.String(), `"error":`) {
			t.Errorf("POST %s %.60s: body %s, want an error saying what is wrong", tc.path, tc.body, w.Body)
		}
	}

	acts.mu.Lock()
	acts.err = fmt.Errorf("%w: jobs: invalid input: key: a control character", ErrInvalid)
	acts.mu.Unlock()
	if w := post("/api/keys/skip", `{"key":"a\tb"}`, false); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "control character") {
		t.Errorf("skip of a key no job can have: %d %s, want 400 with the reason", w.Code, w.Body)
	}
	acts.mu.Lock()
	acts.err = fmt.Errorf("jobs: skip key %q: %w", "acct-9", ErrNotFound)
	acts.mu.Unlock()
	for _, path := range []string{"/api/keys/retry", "/api/keys/skip"} {
		w := post(path, `{"key":"acct-9"}`, false)
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `key \"acct-9\" is not parked`) {
			t.Errorf("POST %s of a key not parked: %d %s, want 404 naming the key", path, w.Code, w.Body)
		}
	}
}
