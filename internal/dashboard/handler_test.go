package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// newTestDashboard builds a dashboard over a fake source with sample data
// and, when token is set, actions on.
func newTestDashboard(t *testing.T, token string) (*Dashboard, *fakeSource, *fakeActions) {
	t.Helper()
	src := newFakeSource(sampleSnapshot(time.Now()))
	acts := newFakeActions()
	d, err := New(Config{Source: src, Actions: acts, AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return d, src, acts
}

// do serves one request and returns the recorded response.
func do(h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestSnapshotJSON(t *testing.T) {
	d, _, _ := newTestDashboard(t, "")
	w := do(d.Handler(), "GET", "/api/snapshot", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/snapshot: %d %s\n%s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var got Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Self.WorkerID != "lockworker-1" || len(got.Replicas) != 3 || !got.Replicas[1].Leader || got.Replicas[1].Token != 42 {
		t.Errorf("snapshot decoded as %+v", got)
	}
	if got.ReadAt.IsZero() {
		t.Error("readAt not set")
	}
	// The names the page and the lead rely on.
	for _, key := range []string{`"self":`, `"workerId":`, `"state":`, `"leader":true`, `"token":42`, `"jobsDone":`,
		`"lastErrorClass":`, `"class":`, `"ratePerSec":`, `"deadLetters":`, `"previousEnded":"stepped_down"`, `"transitions":`, `"readAt":`} {
		if !strings.Contains(w.Body.String(), key) {
			t.Errorf("snapshot JSON lacks %s:\n%s", key, w.Body)
		}
	}
}

// TestSnapshotEmpty: a source with nothing yet gives [] not null, so the
// page never trips over a missing list.
func TestSnapshotEmpty(t *testing.T) {
	src := newFakeSource(Snapshot{})
	d, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	body := do(d.Handler(), "GET", "/api/snapshot", "").Body.String()
	if strings.Contains(body, "null") {
		t.Errorf("empty snapshot has a null: %s", body)
	}
}

func TestSnapshotSourceDown(t *testing.T) {
	d, src, _ := newTestDashboard(t, "")
	src.fail(errors.New("dial tcp 10.1.2.3:6379: redis://default:hunter2-s3cret@10.1.2.3 refused"))
	w := do(d.Handler(), "GET", "/api/snapshot", "")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", w.Code)
	}
	if b := w.Body.String(); strings.Contains(b, "10.1.2.3") || strings.Contains(b, "hunter2") {
		t.Errorf("the source's error leaked: %s", b)
	}
}

func TestSecurityHeaders(t *testing.T) {
	d, _, _ := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/chart.svg", "/api/snapshot", "/api/chart", "/api/info", "/nope"} {
		w := do(h, "GET", path, "")
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP allows something unsafe: %q", path, csp)
		}
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options = %q", path, got)
		}
	}
}

// TestStatic: the page and its files are served with the right types
// (nosniff makes a wrong one fatal), unknown paths are 404, and the page
// has nothing inline for the policy to forbid.
func TestStatic(t *testing.T) {
	d, _, _ := newTestDashboard(t, "")
	h := d.Handler()
	for path, ctype := range map[string]string{
		"/":                   "text/html",
		"/assets/app.js":      "text/javascript",
		"/assets/app.css":     "text/css",
		"/assets/favicon.svg": "image/svg+xml",
		"/chart.svg":          "image/svg+xml",
		"/api/chart":          "application/json",
	} {
		w := do(h, "GET", path, "")
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, w.Code, w.Header().Get("Content-Type"), ctype)
		}
	}
	for _, path := range []string{"/nope", "/assets/", "/assets/nope.js", "/api/nope", "/index.html/x"} {
		if w := do(h, "GET", path, ""); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
	page := do(h, "GET", "/", "").Body.String()
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<]|<script>|\son[a-z]+\s*=|\sstyle\s*=|<style|javascript:`)
	if m := inline.FindString(page); m != "" {
		t.Errorf("the page has inline script or style: %q", m)
	}
	if !strings.Contains(page, `<script src="assets/app.js" defer></script>`) {
		t.Error("the page does not load its script from a file")
	}
	for _, ext := range []string{"http://", "https://", "//fonts", "cdn"} {
		if strings.Contains(strings.ReplaceAll(page, "http://www.w3.org", ""), ext) {
			t.Errorf("the page refers to something outside: %q", ext)
		}
	}
}

// TestScriptWritesTextOnly: the script never parses data as HTML.
func TestScriptWritesTextOnly(t *testing.T) {
	d, _, _ := newTestDashboard(t, "")
	js := do(d.Handler(), "GET", "/assets/app.js", "").Body.String()
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

func TestActionsAuth(t *testing.T) {
	d, _, acts := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	endpoints := []string{"/api/auth", "/api/stepdown", "/api/queue/pause", "/api/queue/resume", "/api/deadletters/01JD8ZQ3M6K2V7C4XN9B5T1HRA/requeue",
		"/api/keys/retry", "/api/keys/skip"}
	for _, path := range endpoints {
		for name, header := range map[string]string{
			"none":         "",
			"wrong":        "Bearer " + strings.Repeat("x", len(testAdminToken)),
			"prefix":       "Bearer " + testAdminToken[:len(testAdminToken)-1],
			"longer":       "Bearer " + testAdminToken + "x",
			"not bearer":   "Basic " + testAdminToken,
			"bare token":   testAdminToken,
			"lowercase":    "bearer " + testAdminToken,
			"empty bearer": "Bearer ",
		} {
			r := httptest.NewRequest("POST", path, nil)
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("POST %s with %s token: %d, want 401 with WWW-Authenticate", path, name, w.Code)
			}
		}
	}
	if calls := acts.calls(); len(calls) != 0 {
		t.Errorf("unauthorised requests reached Actions: %v", calls)
	}
}

func TestActionsWithToken(t *testing.T) {
	d, _, acts := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	for _, tc := range []struct {
		path, call string
		code       int
		body       string
	}{
		{"/api/auth", "", http.StatusNoContent, ""},
		{"/api/stepdown?token=42", "stepdown:0:42", http.StatusOK, `{"ok":true}`},
		{"/api/queue/pause", "pause", http.StatusOK, `{"ok":true}`},
		{"/api/queue/resume", "resume", http.StatusOK, `{"ok":true}`},
		{"/api/deadletters/01JD8ZQ3M6K2V7C4XN9B5T1HRA/requeue", "requeue:01JD8ZQ3M6K2V7C4XN9B5T1HRA", http.StatusOK, `{"id":"01JDNEWJOB0000000000000000"}`},
	} {
		w := do(h, "POST", tc.path, testAdminToken)
		if w.Code != tc.code || strings.TrimSpace(w.Body.String()) != tc.body {
			t.Errorf("POST %s: %d %s, want %d %s", tc.path, w.Code, w.Body, tc.code, tc.body)
		}
	}
	want := []string{"stepdown:0:42", "pause", "resume", "requeue:01JD8ZQ3M6K2V7C4XN9B5T1HRA"}
	if got := acts.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Actions got %v, want %v", got, want)
	}
	if w := do(h, "GET", "/api/info", ""); strings.TrimSpace(w.Body.String()) != `{"actions":true}` {
		t.Errorf("GET /api/info = %s", w.Body)
	}
	if w := do(h, "POST", "/api/deadletters/a%20b/requeue", testAdminToken); w.Code != http.StatusBadRequest {
		t.Errorf("requeue of a bad ID: %d, want 400", w.Code)
	}
	if w := do(h, "GET", "/api/stepdown", testAdminToken); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/stepdown: %d, want 405 (actions are POST)", w.Code)
	}
}

func TestActionErrors(t *testing.T) {
	d, _, acts := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	for _, tc := range []struct {
		err  error
		path string
		code int
	}{
		{fmt.Errorf("jobs: requeue x: %w", ErrNotFound), "/api/deadletters/x/requeue", http.StatusNotFound},
		{fmt.Errorf("leader: %w", ErrNoLeader), "/api/stepdown?token=1", http.StatusConflict},
		{fmt.Errorf("operator: %w", ErrEnded), "/api/stepdown?token=1", http.StatusConflict},
		{errors.New("dial redis://default:hunter2-s3cret@10.0.0.5:6379: refused"), "/api/queue/pause", http.StatusServiceUnavailable},
	} {
		acts.mu.Lock()
		acts.err = tc.err
		acts.mu.Unlock()
		w := do(h, "POST", tc.path, testAdminToken)
		if w.Code != tc.code {
			t.Errorf("POST %s failing with %v: %d, want %d", tc.path, tc.err, w.Code, tc.code)
		}
		if strings.Contains(w.Body.String(), "hunter2") || !strings.Contains(w.Body.String(), `"error":`) {
			t.Errorf("POST %s: body %s", tc.path, w.Body)
		}
	}
}

// TestStepDownNamesItsLeadership: a step-down names the leadership it
// means by its fencing token and, with partitions, its partition; a
// request without them, or with one the fleet does not have, is refused
// (400) and reaches no action.
func TestStepDownNamesItsLeadership(t *testing.T) {
	for _, tc := range []struct {
		partitions int
		query      string
		code       int
		call       string
	}{
		{1, "", http.StatusBadRequest, ""},
		{1, "?token=0", http.StatusBadRequest, ""},
		{1, "?token=-3", http.StatusBadRequest, ""},
		{1, "?token=x", http.StatusBadRequest, ""},
		{1, "?token=7", http.StatusOK, "stepdown:0:7"},
		{1, "?token=7&partition=0", http.StatusOK, "stepdown:0:7"},
		{1, "?token=7&partition=1", http.StatusBadRequest, ""},
		{4, "?token=7", http.StatusBadRequest, ""}, // not partition 0 by default
		{4, "?token=7&partition=-1", http.StatusBadRequest, ""},
		{4, "?token=7&partition=4", http.StatusBadRequest, ""},
		{4, "?token=7&partition=", http.StatusBadRequest, ""},
		{4, "?token=7&partition=3", http.StatusOK, "stepdown:3:7"},
	} {
		acts := newFakeActions()
		d, err := New(Config{Source: newFakeSource(sampleSnapshot(time.Now())), Actions: acts, AdminToken: testAdminToken,
			Partitions: tc.partitions})
		if err != nil {
			t.Fatal(err)
		}
		w := do(d.Handler(), "POST", "/api/stepdown"+tc.query, testAdminToken)
		calls := acts.calls()
		if w.Code != tc.code || (tc.call == "" && len(calls) > 0) || (tc.call != "" && fmt.Sprint(calls) != "["+tc.call+"]") {
			t.Errorf("P=%d POST /api/stepdown%s: %d %s, calls %v; want %d, call %q", tc.partitions, tc.query, w.Code,
				strings.TrimSpace(w.Body.String()), calls, tc.code, tc.call)
		}
		if w.Code == http.StatusBadRequest && !strings.Contains(w.Body.String(), `"error":`) {
			t.Errorf("P=%d POST /api/stepdown%s: body %s, want an error saying what is wrong", tc.partitions, tc.query, w.Body)
		}
	}
}

// TestActionsOffWithoutToken: with no admin token the action endpoints do
// not exist. 404, not 403: no credential could ever pass, so there is no
// resource to be refused, and httpapi's POST /jobs does the same.
func TestActionsOffWithoutToken(t *testing.T) {
	d, _, acts := newTestDashboard(t, "")
	h := d.Handler()
	for _, path := range []string{"/api/auth", "/api/stepdown", "/api/queue/pause", "/api/queue/resume", "/api/deadletters/x/requeue",
		"/api/keys/retry", "/api/keys/skip"} {
		for _, token := range []string{"", "anything-at-all-12345"} {
			if w := do(h, "POST", path, token); w.Code != http.StatusNotFound {
				t.Errorf("POST %s: %d, want 404", path, w.Code)
			}
		}
	}
	if w := do(h, "GET", "/api/info", ""); strings.TrimSpace(w.Body.String()) != `{"actions":false}` {
		t.Errorf("GET /api/info = %s", w.Body)
	}
	if calls := acts.calls(); len(calls) != 0 {
		t.Errorf("Actions called with actions off: %v", calls)
	}
}

func TestNew(t *testing.T) {
	src := newFakeSource(Snapshot{})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"minimal", Config{Source: src}, ""},
		{"actions", Config{Source: src, Actions: newFakeActions(), AdminToken: testAdminToken}, ""},
		{"actions without token", Config{Source: src, Actions: newFakeActions()}, ""},
		{"no source", Config{}, "Source is required"},
		{"token without actions", Config{Source: src, AdminToken: testAdminToken}, "Actions is nil"},
		{"short token", Config{Source: src, Actions: newFakeActions(), AdminToken: "tok3n"}, "shorter than 16 bytes"},
		{"token with space", Config{Source: src, Actions: newFakeActions(), AdminToken: "has a space in it!!"}, "space or a control character"},
		{"negative interval", Config{Source: src, MinInterval: -time.Second}, "MinInterval"},
		{"negative refresh", Config{Source: src, RefreshInterval: -1}, "RefreshInterval"},
		{"negative streams", Config{Source: src, MaxStreams: -1}, "MaxStreams"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), tc.cfg.AdminToken) && tc.cfg.AdminToken != "":
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
}
