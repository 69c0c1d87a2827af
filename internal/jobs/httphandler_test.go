package jobs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockworker/lockworker/internal/backoff"
	"github.com/lockworker/lockworker/internal/tail"
	"github.com/lockworker/lockworker/internal/testkit/poll"
)

// newHTTP is an HTTPHandler for url whose idle connections close with the
// test; mod adjusts its config.
func newHTTP(t testing.TB, url string, mod func(*HTTPConfig)) *HTTPHandler {
	t.Helper()
	cfg := HTTPConfig{URL: url, WorkerID: "w-1"}
	if mod != nil {
		mod(&cfg)
	}
	h, err := NewHTTPHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.CloseIdleConnections)
	return h
}

// serve starts a test server; conns counts the connections it accepted.
func serve(t testing.TB, h http.HandlerFunc) (srv *httptest.Server, conns *atomic.Int64) {
	t.Helper()
	conns = new(atomic.Int64)
	srv = httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

// answer is a handler that reads the request and answers status and body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestHTTPHandlerRequest(t *testing.T) {
	type seen struct {
		method, path, body string
		header             http.Header
	}
	got := make(chan seen, 1)
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, string(b), r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	})
	h := newHTTP(t, srv.URL+"/jobs", func(c *HTTPConfig) { c.Token = "tok-1" })
	job := Job{ID: "01JOB", Payload: []byte("hello\x00world"), Attempt: 3, Partition: 7, Key: "acct-ü-1"}
	if err := h.Handle(t.Context(), job, newLease(42, time.Minute)); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.method != http.MethodPost || s.path != "/jobs" || s.body != "hello\x00world" {
		t.Fatalf("request %s %s %q", s.method, s.path, s.body)
	}
	for name, want := range map[string]string{
		"Lockworker-Job-Id": "01JOB", "Lockworker-Attempt": "3", "Lockworker-Fencing-Token": "42",
		"Lockworker-Worker-Id": "w-1", "Idempotency-Key": "01JOB", "Authorization": "Bearer tok-1",
		"Content-Type": "application/octet-stream", "Lockworker-Partition": "7", "Lockworker-Key": "acct-ü-1",
	} {
		if v := s.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	for _, name := range []string{HeaderDueAt, HeaderSchedule, HeaderScheduledAt} {
		if v, ok := s.header[name]; ok {
			t.Errorf("a job neither delayed nor scheduled: header %s = %q", name, v)
		}
	}
	job = Job{ID: "01JOB", Payload: []byte("x"), Attempt: 1, Schedule: "nightly", DueAt: time.UnixMilli(1772359200123)}
	if err := h.Handle(t.Context(), job, newLease(42, time.Minute)); err != nil {
		t.Fatal(err)
	}
	s = <-got
	for name, want := range map[string]string{HeaderSchedule: "nightly", HeaderScheduledAt: "2026-03-01T10:00:00.123Z",
		HeaderDueAt: "2026-03-01T10:00:00.123Z"} {
		if v := s.header.Get(name); v != want {
			t.Errorf("a tick's header %s = %q, want %q", name, v, want)
		}
	}
}

// Each kind of answer means what HTTPHandler says.
func TestHTTPHandlerAnswers(t *testing.T) {
	for _, tt := range []struct {
		status    int
		body      string
		stale     bool
		permanent bool
		want      string // in the error
	}{
		{status: 200}, {status: 201}, {status: 204},
		{status: 409, body: `{"fence": 9}`, stale: true, want: `409 Conflict: the store rejected fencing token 7 as stale: {"fence": 9}`},
		{status: 400, body: "bad payload", permanent: true, want: "400 Bad Request: bad payload"},
		{status: 401, permanent: true, want: "401 Unauthorized"},
		{status: 404, permanent: true, want: "404 Not Found"},
		{status: 422, body: "no such account", permanent: true, want: "422 Unprocessable Entity: no such account"},
		{status: 408, want: "408 Request Timeout"},
		{status: 429, body: "slow down", want: "429 Too Many Requests: slow down"},
		{status: 500, body: "boom", want: "500 Internal Server Error: boom"},
		{status: 503, want: "503 Service Unavailable"},
	} {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			srv, _ := serve(t, answer(tt.status, tt.body))
			err := newHTTP(t, srv.URL, nil).Handle(t.Context(), Job{ID: "J", Attempt: 1}, newLease(7, time.Minute))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("%d: %v, want done", tt.status, err)
				}
				return
			}
			var se *HTTPStatusError
			if !errors.As(err, &se) || se.Status != tt.status {
				t.Fatalf("%d: %v, want an HTTPStatusError", tt.status, err)
			}
			if errors.Is(err, ErrStaleToken) != tt.stale || errors.Is(err, ErrPermanent) != tt.permanent {
				t.Fatalf("%d: stale %v permanent %v, want %v %v", tt.status,
					errors.Is(err, ErrStaleToken), errors.Is(err, ErrPermanent), tt.stale, tt.permanent)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%d: %q lacks %q", tt.status, err, tt.want)
			}
		})
	}
}

// A 429 or 503 may say when to come back (Retry-After: seconds or an HTTP
// date): the error carries it; any other answer's Retry-After is not
// taken.
func TestHTTPHandlerRetryAfter(t *testing.T) {
	soon := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tt := range []struct {
		status   int
		header   string
		min, max time.Duration // -1: asks for nothing
	}{
		{429, "3600", time.Hour, time.Hour},
		{503, "0", 0, 0},
		{503, soon, 80 * time.Second, 90 * time.Second},
		{429, "", -1, -1},
		{429, "soon", -1, -1},
		{500, "5", -1, -1},
	} {
		srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if tt.header != "" {
				w.Header().Set("Retry-After", tt.header)
			}
			w.WriteHeader(tt.status)
		})
		err := newHTTP(t, srv.URL, nil).Handle(t.Context(), Job{ID: "J", Attempt: 1}, newLease(7, time.Minute))
		d, ok := RetryAfter(err)
		if tt.min < 0 && ok || tt.min >= 0 && (!ok || d < tt.min || d > tt.max) {
			t.Errorf("%d with Retry-After %q: %s, %v; want %s to %s", tt.status, tt.header, d, ok, tt.min, tt.max)
		}
	}
}

// Redirects are not followed: the job goes nowhere JOB_URL does not name,
// and the answer is a failed attempt naming the target (without its user
// information or query).
func TestHTTPHandlerDoesNotFollowRedirects(t *testing.T) {
	var hits atomic.Int64
	target, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", strings.Replace(target.URL, "http://", "http://u:pw-s3cret@", 1)+"/elsewhere?key=q-s3cret")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	err := newHTTP(t, srv.URL, nil).Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
	if err == nil || errors.Is(err, ErrPermanent) || errors.Is(err, ErrStaleToken) {
		t.Fatalf("redirect: %v, want a failed attempt", err)
	}
	if !strings.Contains(err.Error(), "307 Temporary Redirect: redirect to "+target.URL+"/elsewhere, not followed") ||
		strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("redirect error %q", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

// The start of an error answer's body is quoted safely: no secret, no
// control characters, at most maxQuoted bytes.
func TestHTTPHandlerQuotesBodySafely(t *testing.T) {
	body := "line one\r\n\x1b[31mred\x00\t" + "echo: Bearer tok-s3cret, pw-s3cret " + strings.Repeat("é", 600)
	srv, _ := serve(t, answer(http.StatusBadRequest, body))
	h := newHTTP(t, strings.Replace(srv.URL, "http://", "http://user:pw-s3cret@", 1), func(c *HTTPConfig) { c.Token = "tok-s3cret" })
	err := h.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
	var se *HTTPStatusError
	if !errors.As(err, &se) {
		t.Fatalf("%v, want an HTTPStatusError", err)
	}
	if strings.Contains(se.Body, "s3cret") || !strings.HasPrefix(se.Body, "line one [31mred echo: Bearer [redacted], [redacted] éé") {
		t.Fatalf("quoted body %q", se.Body)
	}
	if !strings.HasSuffix(se.Body, "…") || len(se.Body) > maxQuoted+len("…") {
		t.Fatalf("quoted body of %d bytes, want it cut at %d with …", len(se.Body), maxQuoted)
	}
	if strings.ContainsFunc(se.Body, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\uFFFD' }) {
		t.Fatalf("quoted body keeps control characters or a broken rune: %q", se.Body)
	}
}

// No server: a failed attempt, whose error says what went wrong and not
// the URL (which may carry a password).
func TestHTTPHandlerNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := newHTTP(t, "http://user:pw-s3cret@"+addr+"/jobs?key=q-s3cret", nil)
	err = h.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
	if err == nil || errors.Is(err, ErrPermanent) || errors.Is(err, ErrStaleToken) || errors.Is(err, errCut) {
		t.Fatalf("no server: %v, want a failed attempt", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("no server: %q", err)
	}
}

// stall is a handler that reads the request, reports it arrived, and
// answers nothing until the client gives up, which it reports too.
func stall(in, gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server watches the connection once the body is read
		if in != nil {
			in <- struct{}{}
		}
		<-r.Context().Done()
		if gone != nil {
			gone <- struct{}{}
		}
	}
}

// A request is cut at the timeout, and at the lease's local deadline less
// the margin, whichever comes first; either is a failed attempt.
func TestHTTPHandlerDeadlines(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		lease   time.Duration
		want    string
	}{
		{"timeout", 50 * time.Millisecond, time.Hour, "no answer within 50ms"},
		{"lease", time.Hour, 300 * time.Millisecond, "100ms before the lease's local deadline"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gone := make(chan struct{}, 1)
			srv, _ := serve(t, stall(nil, gone))
			h := newHTTP(t, srv.URL, func(c *HTTPConfig) { c.Timeout, c.LeaseMargin = tt.timeout, 100*time.Millisecond })
			err := h.Handle(t.Context(), Job{ID: "J"}, newLease(1, tt.lease))
			if !errors.Is(err, errCut) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want a cut request: %s", err, tt.want)
			}
			if errors.Is(err, ErrPermanent) || errors.Is(err, ErrStaleToken) {
				t.Fatalf("%v: a cut request is a failed attempt", err)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the server never saw the request end")
			}
		})
	}
}

// A renewal moves the lease's deadline, and the request's with it: a
// request may outlast the deadline its lease had when it started.
func TestHTTPHandlerFollowsRenewals(t *testing.T) {
	in, release := make(chan struct{}, 1), make(chan struct{})
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		in <- struct{}{}
		select {
		case <-release:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	lease := newLease(1, 300*time.Millisecond)
	first := lease.Deadline()
	h := newHTTP(t, srv.URL, func(c *HTTPConfig) { c.LeaseMargin = 100 * time.Millisecond })
	errc := make(chan error, 1)
	go func() { errc <- h.Handle(t.Context(), Job{ID: "J"}, lease) }()
	<-in
	lease.mu.Lock()
	lease.deadline = time.Now().Add(time.Hour) // renewed
	lease.mu.Unlock()
	poll.Until(t, 5*time.Second, "the first deadline to pass", func() bool { return time.Now().After(first) })
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("a request past its lease's first deadline, after a renewal: %v", err)
	}
}

// When the leadership ends (the job's context), the request stops at once
// with the context's cause: the worker calls that an interrupted job, not
// a failure.
func TestHTTPHandlerStopsWithLeadership(t *testing.T) {
	in := make(chan struct{}, 1)
	srv, _ := serve(t, stall(in, nil))
	h := newHTTP(t, srv.URL, nil)
	ended := errors.New("leadership ended")
	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- h.Handle(ctx, Job{ID: "J"}, newLease(1, time.Hour)) }()
	<-in
	cancel(ended)
	if err := <-errc; !errors.Is(err, ended) || errors.Is(err, errCut) {
		t.Fatalf("%v, want the leadership's cause", err)
	}
}

// One connection serves job after job (keep-alive), whatever the answer.
func TestHTTPHandlerReusesConnections(t *testing.T) {
	var n atomic.Int64
	srv, conns := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1)%3 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, strings.Repeat("busy ", 1000))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := newHTTP(t, srv.URL, nil)
	for i := range 30 {
		err := h.Handle(t.Context(), Job{ID: "J" + strconv.Itoa(i), Payload: []byte("x")}, newLease(1, time.Minute))
		if (i%3 == 2) != (err != nil) {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if c := conns.Load(); c != 1 {
		t.Fatalf("30 jobs took %d connections, want 1", c)
	}
}

// TestHTTPHandlerAttemptIsTruthful: a kept-alive connection that closes
// after the service read a request (a crash, a proxy's idle cut) does
// not make the same attempt arrive twice. Go's Transport re-sends a
// request carrying Idempotency-Key on such a close, headers unchanged;
// here it is a failed attempt, and the next attempt carries the next
// number.
func TestHTTPHandlerAttemptIsTruthful(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // job ID and attempt -> arrivals
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		id := r.Header.Get(HeaderJobID) + " attempt " + r.Header.Get(HeaderAttempt)
		seen[id]++
		first := seen[id] == 1
		mu.Unlock()
		if id == "J2 attempt 1" && first {
			// Read, then the connection closes with no answer.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := newHTTP(t, srv.URL, nil)
	if err := h.Handle(t.Context(), Job{ID: "J1", Payload: []byte("x"), Attempt: 1}, newLease(1, time.Minute)); err != nil {
		t.Fatal(err) // J2 goes out on this kept-alive connection
	}
	err := h.Handle(t.Context(), Job{ID: "J2", Payload: []byte("x"), Attempt: 1}, newLease(1, time.Minute))
	if err == nil || errors.Is(err, ErrPermanent) || errors.Is(err, ErrStaleToken) || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("J2 attempt 1 = %v, want a failed attempt (no answer)", err)
	}
	if err := h.Handle(t.Context(), Job{ID: "J2", Payload: []byte("x"), Attempt: 2}, newLease(1, time.Minute)); err != nil {
		t.Fatalf("J2 attempt 2: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", id, n)
		}
	}
	if len(seen) != 3 {
		t.Errorf("arrivals %v, want J1 attempt 1, J2 attempts 1 and 2", seen)
	}
}

// A job whose request gets an answer is one line at INFO, as the log
// handler's jobs are: its ID, token, attempt, status and time.
func TestHTTPHandlerLogsEachJob(t *testing.T) {
	srv, _ := serve(t, answer(http.StatusNoContent, ""))
	var buf tail.Buffer
	h := newHTTP(t, srv.URL, func(c *HTTPConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	if err := h.Handle(t.Context(), Job{ID: "J7", Payload: []byte("x"), Attempt: 2}, newLease(9, time.Minute)); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(buf.String())
	for _, want := range []string{"level=INFO", "jobId=J7", "token=9", "attempt=2", "status=204", "tookMs="} {
		if strings.Contains(line, "\n") || !strings.Contains(line, want) {
			t.Errorf("log %q lacks %s", line, want)
		}
	}
}

// https to a server whose certificate a private CA signed: refused with
// the system's roots (a failed attempt, not a permanent one), accepted
// with the CA in RootCAs.
func TestHTTPHandlerTLSPrivateCA(t *testing.T) {
	pool, cert := testPKI(t)
	srv := httptest.NewUnstartedServer(answer(http.StatusNoContent, ""))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") {
		t.Fatalf("server URL %s", srv.URL)
	}
	err := newHTTP(t, srv.URL, nil).Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute))
	if err == nil || errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("without the CA: %v, want a certificate error", err)
	}
	if err := newHTTP(t, srv.URL, func(c *HTTPConfig) { c.RootCAs = pool }).Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute)); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
}

// testPKI is a CA (as a pool) and a server certificate for 127.0.0.1 it
// signed.
func testPKI(t *testing.T) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockworker test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestHTTPHandlerConfig(t *testing.T) {
	for _, cfg := range []HTTPConfig{
		{}, {URL: "ftp://h/x"}, {URL: "http:///x"}, {URL: "http://h\x7f/"}, {URL: "h:80"},
		{URL: "http://h", Timeout: -time.Second}, {URL: "http://h", LeaseMargin: -time.Second},
		{URL: "http://h", Token: "a b"}, {URL: "http://h", Token: "a\nb"},
	} {
		if _, err := NewHTTPHandler(cfg); err == nil || !strings.HasPrefix(err.Error(), "jobs: http handler: ") {
			t.Errorf("NewHTTPHandler(%+v): %v, want a config error", cfg, err)
		}
	}
	h := must(NewHTTPHandler(HTTPConfig{URL: "https://h/x"}))
	if h.timeout != DefaultHTTPTimeout || h.margin != 100*time.Millisecond {
		t.Fatalf("defaults: timeout %s margin %s", h.timeout, h.margin)
	}
	if got := SafeURL("https://u:pw@h:8443/jobs?key=k#f"); got != "https://h:8443/jobs" {
		t.Fatalf("SafeURL = %q", got)
	}
}

// testStore is a fenced store behind HTTP, as a user's service would be:
// it applies a job's write only when the request's token is at least the
// highest it has seen (checked and raised under one lock with the write),
// and answers 409 otherwise.
type testStore struct {
	mu       sync.Mutex
	fence    int64
	writes   []storeWrite // applied, in order
	rejected []storeWrite
	// before, when set, runs first for each request (outside the lock)
	// and may answer it itself (returning false).
	before func(w http.ResponseWriter, r *http.Request, token int64) bool
}

type storeWrite struct {
	job     string
	token   int64
	attempt int
}

func (s *testStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	token, _ := strconv.ParseInt(r.Header.Get(HeaderFencingToken), 10, 64)
	attempt, _ := strconv.Atoi(r.Header.Get(HeaderAttempt))
	wr := storeWrite{job: r.Header.Get(HeaderJobID), token: token, attempt: attempt}
	if s.before != nil && !s.before(w, r, token) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.fence {
		s.rejected = append(s.rejected, wr)
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "stale token %d, fence %d", token, s.fence)
		return
	}
	s.fence = token
	s.writes = append(s.writes, wr)
	w.WriteHeader(http.StatusNoContent)
}

func (s *testStore) state() (writes, rejected []storeWrite) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeWrite(nil), s.writes...), append([]storeWrite(nil), s.rejected...)
}

// A 409 from the store (it saw a newer token; Redis did not) ends
// Process with ErrStaleToken; the jobs before it are committed, that job
// is given back without counting a delivery, and the next leader runs it
// as a first attempt.
func TestHTTP409EndsLeadershipUncounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := &testStore{}
	srv, _ := serve(t, store.ServeHTTP)
	q := e.queue(t, newHTTP(t, srv.URL, nil), func(c *WorkerConfig) { c.Batch = DefaultBatch })
	ids := e.enqueue(t, q, 3)
	old := becomeLeader(t, e.c)
	// The store has seen a newer token than the queue's fence: say its
	// fence was raised by another fleet, or Redis lost the epoch.
	store.before = func(w http.ResponseWriter, r *http.Request, token int64) bool {
		if r.Header.Get(HeaderJobID) == ids[1] && token == old {
			store.mu.Lock()
			store.fence = old + 10
			store.mu.Unlock()
		}
		return true
	}
	err := processUntilEnd(t, q, newLease(old, time.Minute))
	var se *HTTPStatusError
	if !errors.Is(err, ErrStaleToken) || !errors.As(err, &se) || se.Status != http.StatusConflict {
		t.Fatalf("Process = %v, want the store's 409 as ErrStaleToken", err)
	}
	if s := stats(t, q); s.Committed != 1 || s.DeadLettered != 0 || s.Pending != 2 {
		t.Fatalf("after the 409: %+v, want job 0 committed, 2 pending, none dead", s)
	}
	if n, _ := e.c.HLen(t.Context(), q.attempts).Result(); n != 0 {
		t.Fatalf("the attempts hash has %d entries, want the 409 uncounted", n)
	}
	// Raise the fleet's epoch past the store's fence, as an operator
	// would: the next leader runs the job as its first attempt.
	e.c.Set(t.Context(), testKeys.Epoch(), old+10, 0)
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	waitCommitted(t, q, 3)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	writes, rejected := store.state()
	if len(rejected) != 1 || rejected[0].job != ids[1] || rejected[0].token != old {
		t.Fatalf("rejected %+v, want job 1 under token %d", rejected, old)
	}
	if len(writes) != 3 || writes[1].job != ids[1] || writes[1].attempt != 1 || writes[2].job != ids[2] {
		t.Fatalf("writes %+v, want jobs 0, 1 (first attempt again), 2", writes)
	}
}

// A 4xx fails its job for good at once (its key parks) with its status
// and body; 5xx and 429 are retried; the other keys move on.
func TestHTTPAnswersThroughProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls sync.Map // job ID -> *atomic.Int64
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n, _ := calls.LoadOrStore(r.Header.Get(HeaderJobID), new(atomic.Int64))
		call := n.(*atomic.Int64).Add(1)
		switch p := string(body); {
		case p == "job 0":
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, "no such account")
		case p == "job 1" && call == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case p == "job 1" && call == 2:
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	q := e.queue(t, newHTTP(t, srv.URL, nil), func(c *WorkerConfig) { c.MaxAttempts = 5 })
	var ids []string
	for i := range 3 {
		id, err := q.Enqueue(t.Context(), fmt.Sprint("acct-", i), fmt.Appendf(nil, "job %d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	stop, _ := process(t, q, newLease(becomeLeader(t, e.c), time.Minute))
	poll.Until(t, 20*time.Second, "all jobs finished or parked", func() bool {
		s := stats(t, q)
		return s.Committed == 2 && s.Parked == 1
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ps, err := q.Parked(t.Context())
	if err != nil || len(ps) != 1 || ps[0].JobID != ids[0] || ps[0].Key != "acct-0" || ps[0].Attempts != 1 ||
		!strings.Contains(ps[0].Error, "422 Unprocessable Entity: no such account") {
		t.Fatalf("parked %+v (%v), want key acct-0 at job 0 after 1 attempt with the 422", ps, err)
	}
	n, _ := calls.Load(ids[1])
	if c := n.(*atomic.Int64).Load(); c != 3 || stats(t, q).Committed != 2 {
		t.Fatalf("job 1 took %d calls, %d committed; want 3 calls (503, 429, 204) and 2 committed", c, stats(t, q).Committed)
	}
}

// A server slower than the lease: the old leader's request is cut at its
// lease's deadline (the server sees it go), the next leader's request is
// the one that lands, and the old one, applied late, is refused by the
// store's fence.
func TestHTTPServerSlowerThanLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := becomeLeader(t, e.c)
	cut, landed := make(chan struct{}), make(chan struct{})
	store := &testStore{}
	store.before = func(w http.ResponseWriter, r *http.Request, token int64) bool {
		if token != old {
			return true
		}
		<-r.Context().Done() // slower than the lease: the client gives up first
		close(cut)
		<-landed // then applies it anyway, late
		return true
	}
	srv, _ := serve(t, store.ServeHTTP)
	h := newHTTP(t, srv.URL, func(c *HTTPConfig) { c.LeaseMargin = 100 * time.Millisecond })
	// The old leader retries no sooner than its lease ends, as the
	// leader's own context would end it.
	oldQ := e.queue(t, h, func(c *WorkerConfig) { c.Backoff = backoff.Policy{Base: time.Hour, Max: time.Hour} })
	ids := e.enqueue(t, oldQ, 1)
	lease := newLease(old, 500*time.Millisecond)
	ctx, cancel := context.WithDeadline(t.Context(), lease.Deadline())
	defer cancel()
	oldDone := make(chan error, 1)
	go func() { oldDone <- oldQ.Process(ctx, lease) }()
	select {
	case <-cut:
	case <-time.After(10 * time.Second):
		t.Fatal("the old leader's request was not cut")
	}
	<-oldDone

	next := becomeLeader(t, e.c)
	newQ := e.queue(t, h, nil)
	stop, _ := process(t, newQ, newLease(next, time.Minute))
	waitCommitted(t, newQ, 1)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	close(landed)
	srv.Close() // waits for the late request's handler
	writes, rejected := store.state()
	if len(writes) != 1 || writes[0].job != ids[0] || writes[0].token != next {
		t.Fatalf("writes %+v, want only the next leader's (token %d)", writes, next)
	}
	if len(rejected) != 1 || rejected[0].token != old {
		t.Fatalf("rejected %+v, want the old leader's late write (token %d)", rejected, old)
	}
}

// No secret (the bearer token, the URL's password) reaches a log line or
// a dead letter, even when the service echoes the request back.
func TestHTTPNoSecretInLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n atomic.Int64
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		status := []int{http.StatusInternalServerError, http.StatusBadRequest, http.StatusConflict}[min(n.Add(1)-1, 2)]
		w.WriteHeader(status)
		fmt.Fprintf(w, "you sent %q", r.Header.Get("Authorization"))
	})
	var logs tail.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	url := strings.Replace(srv.URL, "http://", "http://user:pw-s3cret@", 1) + "/jobs?key=q-s3cret"
	h := newHTTP(t, url, func(c *HTTPConfig) { c.Token = "tok-s3cret"; c.Logger = log })
	q := e.queue(t, h, func(c *WorkerConfig) { c.Logger = log; c.OnFailure = FailureDeadLetter })
	e.enqueue(t, q, 2)
	// 500 (retried), 400 (dead-lettered), 409 (ends Process)
	if err := processUntilEnd(t, q, newLease(becomeLeader(t, e.c), time.Minute)); !errors.Is(err, ErrStaleToken) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Process = %v", err)
	}
	// And a failed connection, whose error would quote the URL.
	refused := newHTTP(t, strings.Replace(url, srv.Listener.Addr().String(), "127.0.0.1:1", 1), func(c *HTTPConfig) { c.Token = "tok-s3cret" })
	if err := refused.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute)); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("connection refused: %v", err)
	}
	// And basic authentication from the URL, echoed back.
	basic := newHTTP(t, url, func(c *HTTPConfig) { c.Logger = log })
	if err := basic.Handle(t.Context(), Job{ID: "J"}, newLease(1, time.Minute)); !strings.Contains(err.Error(), `you sent "Basic [redacted]"`) {
		t.Fatalf("basic authentication echoed: %v", err)
	}
	dl, err := q.DeadLetters(t.Context(), 0)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	out := logs.String()
	for _, want := range []string{"job failed; its key waits and retries", "job dead-lettered", "rejected this leader's token", "[redacted]"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	for _, text := range []string{out, dl[0].Error} {
		if strings.Contains(text, "s3cret") {
			t.Fatalf("a secret reached the logs or a dead letter:\n%s", text)
		}
	}
}

// processUntilEnd runs q.Process until it returns by itself (within 20s).
func processUntilEnd(t *testing.T, q *testQueue, lease Lease) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- q.Process(ctx, lease) }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatal("Process did not end by itself")
		return nil
	}
}
