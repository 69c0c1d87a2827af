package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/schedule"
	"github.com/lockworker/lockworker/internal/statusdoc"
)

const adminToken = "admin-0123456789abcdef"

// postWith is POST /jobs with headers, decoded.
func (a *jobsAPI) postWith(t testing.TB, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", a.srv.URL+"/jobs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ans answer
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		t.Fatalf("POST /jobs answered %d with a body that is no JSON: %v", res.StatusCode, err)
	}
	ans.code = res.StatusCode
	return ans
}

func (a *jobsAPI) stats(t testing.TB) figures.Queue {
	t.Helper()
	s, err := a.q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An Idempotency-Key makes POST /jobs safe to retry: the first enqueues
// (202), every later one, concurrent ones too, enqueues nothing and
// answers 200 with the first job's ID. A bad key is a 400.
func TestIdempotencyKeyHeader(t *testing.T) {
	a := newJobsAPI(t)
	h := map[string]string{"Idempotency-Key": "order-17"}
	const senders = 8
	got := make([]answer, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() { got[i] = a.postWith(t, h, "pay") })
	}
	wg.Wait()
	accepted := 0
	for _, ans := range got {
		if ans.ID != got[0].ID || ans.code != http.StatusOK && ans.code != http.StatusAccepted {
			t.Fatalf("answers %+v, want one ID", got)
		}
		if ans.code == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != 1 || len(a.stream(t)) != 1 {
		t.Fatalf("%d answered 202 and %d jobs queued; want 1 and 1", accepted, len(a.stream(t)))
	}
	for _, bad := range []string{"two words", strings.Repeat("k", 256)} {
		if ans := a.postWith(t, map[string]string{"Idempotency-Key": bad}, "x"); ans.code != http.StatusBadRequest ||
			!strings.Contains(ans.Error, "Idempotency-Key") {
			t.Errorf("Idempotency-Key %q: %+v, want 400 naming the header", bad, ans)
		}
	}
}

// Lockworker-Not-Before delays the job (it is not pending yet); a time
// that is no RFC 3339 time, or more than a year ahead, is a 400 and
// enqueues nothing.
func TestNotBeforeHeader(t *testing.T) {
	a := newJobsAPI(t)
	due := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if ans := a.postWith(t, map[string]string{"Lockworker-Not-Before": due}, "later"); ans.code != http.StatusAccepted || ans.ID == "" {
		t.Fatalf("POST with Lockworker-Not-Before: %+v", ans)
	}
	for _, bad := range []string{"tomorrow", "2026-03-01 02:00:00", time.Now().Add(400 * 24 * time.Hour).Format(time.RFC3339)} {
		if ans := a.postWith(t, map[string]string{"Lockworker-Not-Before": bad}, "x"); ans.code != http.StatusBadRequest {
			t.Errorf("Lockworker-Not-Before %q: %+v, want 400", bad, ans)
		}
	}
	if st := a.stats(t); st.Delayed != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v, want one delayed job and nothing else", st)
	}
}

// An NDJSON body takes each line's due time and idempotency key from the
// fields the headers name; a line whose key an earlier job holds is
// named in "existing" and enqueues nothing; a body of such lines only is
// a 200. Idempotency-Key on a batch is refused.
func TestNDJSONTimeAndIdempotencyFields(t *testing.T) {
	a := newJobsAPI(t)
	due := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	h := map[string]string{"Content-Type": ndjson, "Lockworker-Not-Before-Field": "at", "Idempotency-Key-Field": "op"}
	body := `{"at":"` + due + `","op":"a"}` + "\n" + `{"at":"2000-01-01T00:00:00Z","op":"b"}` + "\n" + `{"at":"2000-01-01T00:00:00Z","op":"a"}` + "\n"
	ans := a.postWith(t, h, body)
	if ans.code != http.StatusAccepted || len(ans.IDs) != 3 || ans.IDs[2] != ans.IDs[0] {
		t.Fatalf("POST /jobs ndjson = %+v", ans)
	}
	if st := a.stats(t); st.Delayed != 1 || st.Pending != 1 {
		t.Fatalf("stats %+v, want one delayed, one pending", st)
	}
	again := a.postWith(t, h, `{"at":"2000-01-01T00:00:00Z","op":"b"}`+"\n")
	if again.code != http.StatusOK || !slices.Equal(again.IDs, ans.IDs[1:2]) {
		t.Fatalf("a batch of a duplicate only: %+v, want 200 and the first job's ID", again)
	}
	if bad := a.postWith(t, map[string]string{"Content-Type": ndjson, "Idempotency-Key": "k"}, "1\n2\n"); bad.code != http.StatusBadRequest {
		t.Fatalf("Idempotency-Key on a batch: %+v, want 400", bad)
	}
	if bad := a.postWith(t, h, `{"op":"c"}`+"\n"); bad.code != http.StatusBadRequest || !strings.Contains(bad.Error, `"at"`) {
		t.Fatalf("a line without its due-time field: %+v, want 400 naming the field", bad)
	}
}

// /api/schedules adds, lists and removes schedules, with the admin token
// only: without it (none, a wrong one, the jobs token) every call is 401
// and changes nothing.
func TestSchedulesAPI(t *testing.T) {
	a := newJobsAPI(t)
	r, err := jobs.NewRouter([]*jobs.Queue{a.q}, a.c, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} },
		AdminToken: adminToken, Schedules: r, JobsToken: token, Enqueue: a.q.EnqueueItem, EnqueueMany: a.q.EnqueueItems})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	call := func(method, path, auth, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	add := `{"name":"nightly","cron":"0 2 * * *","tz":"Europe/Paris","key":"reports","payload":"run","catchUp":"skip"}`
	for _, tc := range []struct {
		method, path, auth, body string
		code                     int
		has                      string
	}{
		{"GET", "/api/schedules", "", "", http.StatusUnauthorized, "admin token"},
		{"POST", "/api/schedules", "wrong-0123456789abcdef", add, http.StatusUnauthorized, "admin token"},
		{"GET", "/api/schedules", adminToken, "", http.StatusOK, "[]"},
		{"POST", "/api/schedules", adminToken, add, http.StatusCreated, `"nextTick":`},
		{"POST", "/api/schedules", adminToken, add, http.StatusConflict, "exists"},
		{"POST", "/api/schedules", adminToken, `{"name":"x","every":"1ms","payload":"p"}`, http.StatusBadRequest, "every"},
		{"POST", "/api/schedules", adminToken, `{"name":"x","every":"1m","payload":"p","extra":1}`, http.StatusBadRequest, "extra"},
		{"GET", "/api/schedules", adminToken, "", http.StatusOK, `"catchUp":"skip"`},
		// Refused without the admin token (the jobs token is not it): the
		// schedule stays, as the DELETE after them shows.
		{"DELETE", "/api/schedules/nightly", "", "", http.StatusUnauthorized, "admin token"},
		{"DELETE", "/api/schedules/nightly", token, "", http.StatusUnauthorized, "admin token"},
		{"POST", "/api/schedules", token, `{"name":"other","every":"1m","payload":"p"}`, http.StatusUnauthorized, "admin token"},
		{"DELETE", "/api/schedules/nightly", adminToken, "", http.StatusNoContent, ""},
		{"DELETE", "/api/schedules/nightly", adminToken, "", http.StatusNotFound, "no schedule"},
	} {
		code, body := call(tc.method, tc.path, tc.auth, tc.body)
		if code != tc.code || !strings.Contains(body, tc.has) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.has)
		}
	}
}

// Without ADMIN_TOKEN, /api/schedules does not exist (404), whatever the
// request bears, and nothing is stored.
func TestSchedulesAPIOffWithoutAdminToken(t *testing.T) {
	a := newJobsAPI(t)
	r, err := jobs.NewRouter([]*jobs.Queue{a.q}, a.c, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Status: func(context.Context) statusdoc.Status { return statusdoc.Status{} },
		Schedules: r, JobsToken: token, Enqueue: a.q.EnqueueItem, EnqueueMany: a.q.EnqueueItems})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if err := r.AddSchedule(t.Context(), jobs.Schedule{Name: "kept", When: schedule.When{Every: time.Minute}, Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"", token, adminToken} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/api/schedules", ""},
			{"POST", "/api/schedules", `{"name":"added","every":"1m","payload":"p"}`},
			{"DELETE", "/api/schedules/kept", ""},
		} {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if auth != "" {
				req.Header.Set("Authorization", "Bearer "+auth)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s bearing %q without ADMIN_TOKEN: %d, want 404", c.method, c.path, auth, res.StatusCode)
			}
		}
	}
	list, err := r.Schedules(t.Context())
	if err != nil || len(list) != 1 || list[0].Name != "kept" {
		t.Fatalf("schedules after the refused calls: %+v, %v; want kept alone", list, err)
	}
}
