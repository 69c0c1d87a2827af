package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockworker/lockworker/internal/httpapi"
	"github.com/lockworker/lockworker/internal/jobs"
	"github.com/lockworker/lockworker/internal/keyspace"
	"github.com/lockworker/lockworker/internal/statusdoc"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

const token = "t0ken-0123456789abcdef"

// jobsAPI is POST /jobs on a real queue in a real Redis, wired as the
// daemon wires it.
type jobsAPI struct {
	srv *httptest.Server
	rs  *redistest.Server
	c   *redis.Client
	q   *jobs.Queue
}

// keys names the test queue's keys.
var keys = keyspace.MustNew("test")

func newJobsAPI(t testing.TB) *jobsAPI {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{})
	c := rs.Client()
	q, err := jobs.New(jobs.Config{Client: c, Keys: keys.Lease()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{
		Status:      func(context.Context) statusdoc.Status { return statusdoc.Status{} },
		Enqueue:     q.EnqueueItem,
		EnqueueMany: q.EnqueueItems,
		JobsToken:   token,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &jobsAPI{srv: srv, rs: rs, c: c, q: q}
}

// answer is a decoded reply of POST /jobs.
type answer struct {
	code  int
	ID    string   `json:"id"`
	IDs   []string `json:"ids"`
	Error string   `json:"error"`
	Line  int      `json:"line"`
}

func (a *jobsAPI) post(t testing.TB, contentType, auth, body string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", a.srv.URL+"/jobs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
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

// stream is what the queue holds, as job ID and payload per job, in
// enqueue order (keyless jobs of one partition: one serial queue).
func (a *jobsAPI) stream(t testing.TB) [][2]string {
	t.Helper()
	all, err := a.q.Unfinished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, j := range all {
		out = append(out, [2]string{j.ID, string(j.Payload)})
	}
	return out
}

const ndjson = "application/x-ndjson"

// TestNDJSONEnqueue: one job per line, in order, their IDs in that order;
// empty lines and line ends are no part of any job; the content type may
// carry parameters; any other content type is one job, as before.
func TestNDJSONEnqueue(t *testing.T) {
	a := newJobsAPI(t)
	ans := a.post(t, ndjson, token, "{\"n\":0}\n\n[1, 2]\r\n\"three\"\n")
	if ans.code != http.StatusAccepted || len(ans.IDs) != 3 || !slices.IsSorted(ans.IDs) {
		t.Fatalf("POST /jobs ndjson = %+v; want 202 and 3 IDs in order", ans)
	}
	want := [][2]string{{ans.IDs[0], `{"n":0}`}, {ans.IDs[1], "[1, 2]"}, {ans.IDs[2], `"three"`}}
	if got := a.stream(t); !slices.Equal(got, want) {
		t.Fatalf("queue = %q, want %q", got, want)
	}
	more := a.post(t, "application/x-ndjson; charset=utf-8", token, "4\n5")
	if more.code != http.StatusAccepted || len(more.IDs) != 2 || more.IDs[0] <= ans.IDs[2] {
		t.Fatalf("POST /jobs ndjson with a charset = %+v", more)
	}
	single := a.post(t, "application/json", token, "{\"a\":1}\n{\"b\":2}\n")
	if single.code != http.StatusAccepted || single.ID == "" {
		t.Fatalf("POST /jobs json = %+v", single)
	}
	if got := a.stream(t); len(got) != 6 || got[5] != [2]string{single.ID, "{\"a\":1}\n{\"b\":2}\n"} {
		t.Fatalf("queue = %q; want the JSON body as one job, verbatim, last", got)
	}
}

// TestNDJSONRefusals: a bad line, a broken limit or a missing token
// enqueues nothing, and the answer says why (and which line).
func TestNDJSONRefusals(t *testing.T) {
	a := newJobsAPI(t)
	many := strings.Repeat("1\n", jobs.MaxBatch) + "\n1\n"
	long := `"` + strings.Repeat("x", jobs.MaxPayload-2) + `"` // the longest line
	huge := strings.Repeat(long+"\n", jobs.MaxBatchBytes/len(long))
	for _, tc := range []struct {
		name, auth, body string
		code, line       int
		msg              string
	}{
		{"no token", "", "1\n2\n", 401, 0, "bearer token"},
		{"a wrong token", "wrong", "1\n2\n", 401, 0, "bearer token"},
		{"a line that is no JSON, in the middle", token, "1\n\n{\"a\":\n3\n", 400, 3, "line 3: not JSON: unexpected end of JSON input; nothing enqueued"},
		{"two values on a line", token, "1\n2 3\n", 400, 2, "line 2: not JSON"},
		{"an empty body", token, "", 400, 0, "no lines (empty lines are skipped); nothing enqueued"},
		{"only empty lines", token, "\n\r\n", 400, 0, "no lines"},
		{"a job too many", token, many, 413, jobs.MaxBatch + 2, "line 1002: more than 1000 lines; nothing enqueued"},
		{"a line too long", token, "1\n" + long + "x\n3\n", 413, 2, "line 2: longer than 1 MiB; nothing enqueued"},
		{"a body too large", token, huge, 413, 0, "more than 8 MiB in all; nothing enqueued"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans := a.post(t, ndjson, tc.auth, tc.body)
			if ans.code != tc.code || ans.Line != tc.line || !strings.Contains(ans.Error, tc.msg) || ans.IDs != nil {
				t.Fatalf("POST /jobs = %+v; want %d, line %d, %q", ans, tc.code, tc.line, tc.msg)
			}
			if got := a.stream(t); len(got) != 0 {
				t.Fatalf("%d jobs enqueued, want none", len(got))
			}
		})
	}
	// The limits hold exactly: the largest body allowed goes through whole.
	if ans := a.post(t, ndjson, token, strings.Repeat("1\n", jobs.MaxBatch)); ans.code != 202 || len(ans.IDs) != jobs.MaxBatch {
		t.Fatalf("POST /jobs with %d lines: %d, %d IDs, %q", jobs.MaxBatch, ans.code, len(ans.IDs), ans.Error)
	}
}

// TestNDJSONRedisErrors: a batch Redis refused (here the queue's ready set
// holds a string) is 503 and nothing enqueued; without an answer from
// Redis, 503 and the batch is whole or absent.
func TestNDJSONRedisErrors(t *testing.T) {
	a := newJobsAPI(t)
	if err := a.c.Set(t.Context(), keys.Lease().Ready(), "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ans := a.post(t, ndjson, token, "1\n2\n"); ans.code != 503 || !strings.Contains(ans.Error, "Redis refused; nothing enqueued") {
		t.Fatalf("POST /jobs to a key of the wrong type = %+v", ans)
	}
	if v := a.c.Get(t.Context(), keys.Lease().Ready()).Val(); v != "not a stream" {
		t.Fatalf("the key now holds %q", v)
	}
	a.rs.Kill()
	if ans := a.post(t, ndjson, token, "1\n2\n"); ans.code != 503 || !strings.Contains(ans.Error, "whole or not at all") {
		t.Fatalf("POST /jobs without Redis = %+v", ans)
	}
}

// BenchmarkHTTPEnqueue: jobs/s through POST /jobs over loopback HTTP with
// keep-alive, one client: a JSON body per job, and NDJSON bodies of n
// lines. 64-byte JSON payloads.
func BenchmarkHTTPEnqueue(b *testing.B) {
	a := newJobsAPI(b)
	payload := `{"n":` + strings.Repeat("1", 57) + `}`
	fresh := func(b *testing.B) {
		b.Helper()
		l := keys.Lease()
		if err := a.c.Del(context.Background(), l.Group("s"), l.Ready(), l.Counters()).Err(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
	}
	b.Run("json-single", func(b *testing.B) {
		fresh(b)
		for range b.N {
			send(b, a, "application/json", []byte(payload))
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	})
	for _, n := range []int{10, 100, 1000} {
		body := []byte(strings.Repeat(payload+"\n", n))
		b.Run("ndjson/lines="+strconv.Itoa(n), func(b *testing.B) {
			fresh(b)
			for range b.N {
				send(b, a, ndjson, body)
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

func send(b *testing.B, a *jobsAPI, contentType string, body []byte) {
	req, err := http.NewRequest("POST", a.srv.URL+"/jobs", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := a.srv.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		b.Fatalf("POST /jobs: %d", res.StatusCode)
	}
}

// TestKeys: Lockworker-Key keys a job, or every line of an NDJSON body;
// Lockworker-Key-Field takes each line's key from one of its fields, and
// a line without it refuses the batch.
func TestKeys(t *testing.T) {
	a := newJobsAPI(t)
	postWith := func(contentType, body string, header ...string) answer {
		t.Helper()
		req, err := http.NewRequest("POST", a.srv.URL+"/jobs", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+token)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans answer
		if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
			t.Fatal(err)
		}
		ans.code = res.StatusCode
		return ans
	}
	keyOf := func() []string {
		all, err := a.q.Unfinished(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range all {
			out = append(out, j.Key)
		}
		return out
	}
	if ans := postWith("text/plain", "one", httpapi.HeaderKey, "customer-7"); ans.code != http.StatusAccepted {
		t.Fatalf("keyed job: %+v", ans)
	}
	if ans := postWith(ndjson, "1\n2\n", httpapi.HeaderKey, "c-1"); ans.code != http.StatusAccepted || len(ans.IDs) != 2 {
		t.Fatalf("keyed lines: %+v", ans)
	}
	if ans := postWith(ndjson, `{"acct":"a"}`+"\n"+`{"acct":"b","x":1}`+"\n", httpapi.HeaderKeyField, "acct"); ans.code != http.StatusAccepted {
		t.Fatalf("lines keyed by a field: %+v", ans)
	}
	if got, want := keyOf(), []string{"customer-7", "c-1", "c-1", "a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	for _, body := range []string{`{"acct":"a"}` + "\n" + `{"other":1}`, `{"acct":5}`, `[1]`, `{"acct":""}`} {
		if ans := postWith(ndjson, body, httpapi.HeaderKeyField, "acct"); ans.code != http.StatusBadRequest {
			t.Errorf("%q: %+v, want 400", body, ans)
		}
	}
	if ans := postWith(ndjson, "1", httpapi.HeaderKeyField, "acct", httpapi.HeaderKey, "k"); ans.code != http.StatusBadRequest {
		t.Errorf("both headers: %+v, want 400", ans)
	}
	if n := len(keyOf()); n != 5 {
		t.Fatalf("%d jobs after refused batches, want 5", n)
	}
}

// TestKeyRefusals: a key given in Lockworker-Key, or in the field that
// Lockworker-Key-Field names, is held to the queue's one rule
// (jobs.CheckKey): empty, blank, a tab or another control character, too
// long: 400 with the reason and the header, for one job and for a batch,
// and nothing enqueued.
func TestKeyRefusals(t *testing.T) {
	a := newJobsAPI(t)
	post := func(contentType, body string, header map[string][]string) answer {
		t.Helper()
		req, err := http.NewRequest("POST", a.srv.URL+"/jobs", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+token)
		maps.Copy(req.Header, header)
		res, err := a.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ans answer
		if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
			t.Fatal(err)
		}
		ans.code = res.StatusCode
		return ans
	}
	key := func(v ...string) map[string][]string { return map[string][]string{httpapi.HeaderKey: v} }
	for _, tc := range []struct {
		name   string
		header map[string][]string
		msg    string
	}{
		{"a tab", key("a\tb"), "Lockworker-Key: ordering key with a control character"},
		{"empty", key(""), "Lockworker-Key: ordering key empty or only spaces"},
		{"blank", key("   "), "Lockworker-Key: ordering key empty or only spaces"},
		{"too long", key(strings.Repeat("k", jobs.MaxKey+1)), "Lockworker-Key: ordering key longer than 1024 bytes"},
		{"twice", key("a", "b"), "Lockworker-Key given more than once"},
	} {
		for _, ct := range []string{"text/plain", ndjson} {
			t.Run(tc.name+" "+ct, func(t *testing.T) {
				if ans := post(ct, "1\n", tc.header); ans.code != http.StatusBadRequest || !strings.Contains(ans.Error, tc.msg) {
					t.Fatalf("POST /jobs = %+v; want 400 and %q", ans, tc.msg)
				}
			})
		}
	}
	field := map[string][]string{httpapi.HeaderKeyField: {"acct"}}
	for body, msg := range map[string]string{
		`{"acct":"x"}` + "\n" + `{"acct":"a\tb"}`: `job 2: key field "acct": ordering key with a control character; nothing enqueued`,
		`{"acct":" "}`:              `job 1: key field "acct": ordering key empty or only spaces; nothing enqueued`,
		`{"acct":"x"}` + "\n" + `7`: `job 2: key field "acct": no JSON object with a string field of that name; nothing enqueued`,
	} {
		if ans := post(ndjson, body, field); ans.code != http.StatusBadRequest || ans.Error != msg {
			t.Errorf("POST /jobs %q = %+v; want 400 and %q", body, ans, msg)
		}
	}
	if ans := post(ndjson, "1", map[string][]string{httpapi.HeaderKeyField: {""}}); ans.code != http.StatusBadRequest {
		t.Errorf("an empty %s: %+v, want 400", httpapi.HeaderKeyField, ans)
	}
	if got := a.stream(t); len(got) != 0 {
		t.Fatalf("%d jobs enqueued, want none", len(got))
	}
	if ans := post("text/plain", "1", key("customer 7")); ans.code != http.StatusAccepted {
		t.Fatalf("a key with a space: %+v", ans)
	}
}

// TestEnqueueOnFullRedis: POST /jobs on a noeviction Redis whose memory
// is full answers 503 saying so, for one job and for a batch, and every
// job acknowledged before is still queued.
func TestEnqueueOnFullRedis(t *testing.T) {
	api := newJobsAPI(t)
	if err := api.c.ConfigSet(t.Context(), "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := api.c.ConfigSet(t.Context(), "maxmemory", "3mb").Err(); err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 64<<10)
	acked := 0
	var last answer
	for range 1000 {
		last = api.post(t, "text/plain", token, payload)
		if last.code != http.StatusAccepted {
			break
		}
		acked++
	}
	if last.code != http.StatusServiceUnavailable || !strings.Contains(last.Error, "Redis is full") {
		t.Fatalf("POST /jobs on a full Redis: %d %q", last.code, last.Error)
	}
	bulk := api.post(t, "application/x-ndjson", token, "\""+payload+"\"\n\""+payload+"\"\n")
	if bulk.code != http.StatusServiceUnavailable || !strings.Contains(bulk.Error, "Redis is full") {
		t.Fatalf("bulk POST /jobs on a full Redis: %d %q", bulk.code, bulk.Error)
	}
	if n := len(api.stream(t)); acked == 0 || n != acked {
		t.Fatalf("%d jobs acknowledged, %d queued", acked, n)
	}
}
