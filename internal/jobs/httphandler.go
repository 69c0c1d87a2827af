package jobs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// HTTPConfig configures an HTTPHandler.
type HTTPConfig struct {
	// URL receives one POST per job: http or https, with a host.
	// Required. User information in it (user:password@) is sent as basic
	// authentication unless Token is set; it never appears in a log line
	// or an error.
	URL string
	// Token, when set, is sent as "Authorization: Bearer <Token>". A
	// secret: never logged, and scrubbed from the answers quoted in
	// errors. Default none.
	Token string
	// RootCAs verifies an https server's certificate. Default nil: the
	// system's roots.
	RootCAs *x509.CertPool
	// Timeout bounds each request, from its start until its answer is
	// read. Default DefaultHTTPTimeout; negative is an error.
	Timeout time.Duration
	// LeaseMargin cuts a request this long before the lease's local
	// deadline (re-read as renewals move it), so no request outlives its
	// leadership and the leader still has time to record the outcome.
	// Default 100ms; negative is an error.
	LeaseMargin time.Duration
	// WorkerID is sent as Lockworker-Worker-Id.
	WorkerID string
	// Logger receives a line per answered request, at INFO. Default:
	// discard.
	Logger *slog.Logger
}

// DefaultHTTPTimeout is HTTPConfig.Timeout's default (JOB_TIMEOUT's).
const DefaultHTTPTimeout = 30 * time.Second

// The request headers every job carries (Idempotency-Key is the job ID).
const (
	HeaderJobID          = "Lockworker-Job-Id"
	HeaderAttempt        = "Lockworker-Attempt"
	HeaderFencingToken   = "Lockworker-Fencing-Token"
	HeaderWorkerID       = "Lockworker-Worker-Id"
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderPartition      = "Lockworker-Partition"
	HeaderKey            = "Lockworker-Key" // only when the job has an ordering key
	// Only for a delayed job or a schedule's tick (FormatTime).
	HeaderDueAt = "Lockworker-Due-At"
	// Only for a schedule's tick: its name, and its tick's time.
	HeaderSchedule    = "Lockworker-Schedule"
	HeaderScheduledAt = "Lockworker-Scheduled-At"
)

// maxQuoted is how much of an error answer's body goes into the error
// (sanitized); maxDrain how much more is read so the connection can be
// reused (a longer body closes it).
const (
	maxQuoted = 512
	maxDrain  = 64 << 10
)

// errCut is the cause of a request cut at its deadline: the timeout, or
// the lease's local deadline less the margin. A request cut at the
// timeout is a failed attempt (retried with backoff); one cut for the
// lease also wraps ErrLeaseEnding: the job is interrupted, delivered
// again by the next leader, and the worker stops.
var errCut = errors.New("jobs: http: request cut at its deadline")

// HTTPHandler posts each job to a URL: the payload as the body, the job,
// its attempt, the fencing token and the worker in headers. What the
// answer means:
//
//   - 2xx: done.
//   - 409: the service's store rejected the fencing token as stale (it has
//     seen a newer one): the error wraps ErrStaleToken, so the worker ends
//     the leadership without counting the job as failed.
//   - 408, 429, 3xx (redirects are not followed), 5xx, a timeout, a
//     connection error: a failed attempt, retried with backoff (after
//     what a 429's or 503's Retry-After asks, if it does, at most the
//     worker's Retry.Max).
//   - Any other 4xx: permanent (wraps ErrPermanent): the job fails for
//     good at once (its key is parked, or it is dead-lettered) with the
//     status and the start of the body.
//
// One Transport serves every request, so connections are kept alive and
// reused (one connection per job in flight).
type HTTPHandler struct {
	url      string
	token    string
	workerID string
	timeout  time.Duration
	margin   time.Duration
	client   *http.Client
	tr       *http.Transport
	secrets  []string // scrubbed from quoted answers
	log      *slog.Logger
}

var _ Handler = (*HTTPHandler)(nil)

// NewHTTPHandler validates cfg and returns an HTTPHandler with its
// defaults filled in.
func NewHTTPHandler(cfg HTTPConfig) (*HTTPHandler, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("jobs: http handler: "+format, args...))
	}
	u, err := CheckJobURL(cfg.URL)
	if err != nil {
		bad("URL: %v", err)
	}
	if cfg.Timeout < 0 {
		bad("Timeout must not be negative, got %s", cfg.Timeout)
	}
	if cfg.LeaseMargin < 0 {
		bad("LeaseMargin must not be negative, got %s", cfg.LeaseMargin)
	}
	if strings.ContainsFunc(cfg.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		bad("Token must not contain spaces or control characters")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultHTTPTimeout
	}
	if cfg.LeaseMargin == 0 {
		cfg.LeaseMargin = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   true,
		// One connection per job in flight (JOB_CONCURRENCY), kept for
		// the next.
		MaxIdleConns:        MaxConcurrency,
		MaxIdleConnsPerHost: MaxConcurrency,
		IdleConnTimeout:     90 * time.Second,
	}
	h := &HTTPHandler{
		url: cfg.URL, token: cfg.Token, workerID: cfg.WorkerID,
		timeout: cfg.Timeout, margin: cfg.LeaseMargin, tr: tr,
		client: &http.Client{
			Transport: tr,
			// A redirect is an answer about the URL, not the job: it is
			// not followed (the job is not sent anywhere JOB_URL does not
			// name) and counts as a failed attempt.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log: cfg.Logger,
	}
	if cfg.Token != "" {
		h.secrets = append(h.secrets, cfg.Token)
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		// And as basic authentication sends it, should a service echo it.
		basic := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
		h.secrets = append(h.secrets, pw, basic)
	}
	return h, nil
}

// CheckJobURL parses a job URL: http or https, with a host. Its errors
// never quote the URL, which may carry a password.
func CheckJobURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, errors.New("is required")
	case err != nil:
		return nil, errors.New("not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	case u.Hostname() == "":
		return nil, errors.New("has no host")
	}
	return u, nil
}

// SafeURL is a job URL as it may be logged: scheme, host and path, with
// no user information or query (either may carry a secret).
func SafeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// CloseIdleConnections closes the kept-alive connections no request is
// using (at shutdown).
func (h *HTTPHandler) CloseIdleConnections() { h.tr.CloseIdleConnections() }

// Handle posts job and reads the answer's status; see HTTPHandler for
// what each means. The request is cut at the earlier of Timeout and the
// lease's local deadline less LeaseMargin, and at once when ctx ends.
func (h *HTTPHandler) Handle(ctx context.Context, job Job, lease Lease) error {
	token := lease.Token()
	start := time.Now()
	if left := time.Until(lease.Deadline().Add(-h.margin)); left <= 0 {
		return fmt.Errorf("jobs: http: not sent: %w: less than %s before its local deadline", ErrLeaseEnding, h.margin)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	bounded := h.bound(rctx, cancel, lease, start)
	defer func() {
		cancel(nil)
		<-bounded
	}()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.url, bytes.NewReader(job.Payload))
	if err != nil {
		return fmt.Errorf("jobs: http: %w", err)
	}
	// Go's Transport sends a request that carries Idempotency-Key again
	// when a kept-alive connection closes before the answer, headers
	// unchanged: the service would see one attempt number twice. Without
	// GetBody it cannot rewind the body, so it never sends it again: the
	// close is a failed attempt, and the next attempt carries the next
	// number. (A 307 or 308 is then answered as it is, as every redirect
	// is.)
	req.GetBody = nil
	h.header(req.Header, job, token)
	resp, err := h.client.Do(req)
	if err != nil {
		return h.failed(ctx, rctx, err)
	}
	defer resp.Body.Close()
	h.log.Info("job posted", "jobId", job.ID, "token", token, "attempt", job.Attempt, "status", resp.StatusCode,
		"tookMs", time.Since(start).Milliseconds())
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		drain(resp.Body)
		return nil
	}
	quoted := h.quote(resp.Body)
	drain(resp.Body)
	if ctx.Err() != nil { // the leadership ended while the body was read
		return fmt.Errorf("jobs: http: request stopped: %w", context.Cause(ctx))
	}
	return &HTTPStatusError{Status: resp.StatusCode, Body: quoted, Token: token, Location: h.location(resp),
		Wait: retryAfter(resp, time.Now())}
}

// retryAfter is the wait a 429 or 503 answer asks for in its Retry-After
// header (seconds, or an HTTP date), -1 when it asks for none.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return -1
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(max(0, min(s, int64(24*time.Hour/time.Second)))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return -1
}

// header sets the job's request headers.
func (h *HTTPHandler) header(hd http.Header, job Job, token int64) {
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("User-Agent", "lockworker")
	hd.Set(HeaderJobID, job.ID)
	hd.Set(HeaderAttempt, strconv.Itoa(job.Attempt))
	hd.Set(HeaderFencingToken, strconv.FormatInt(token, 10))
	hd.Set(HeaderWorkerID, h.workerID)
	hd.Set(HeaderIdempotencyKey, job.ID)
	hd.Set(HeaderPartition, strconv.Itoa(job.Partition))
	if job.Key != "" {
		hd.Set(HeaderKey, job.Key)
	}
	if !job.DueAt.IsZero() {
		hd.Set(HeaderDueAt, FormatTime(job.DueAt))
	}
	if job.Schedule != "" {
		hd.Set(HeaderSchedule, job.Schedule)
		hd.Set(HeaderScheduledAt, FormatTime(job.DueAt))
	}
	if h.token != "" {
		hd.Set("Authorization", "Bearer "+h.token)
	}
}

// bound cancels rctx with an errCut cause at the request's deadline: the
// earlier of start+Timeout and the lease's local deadline less the margin,
// that one re-read when it comes (a renewal moves it). The returned channel
// is closed once rctx is done and the watch has ended.
func (h *HTTPHandler) bound(rctx context.Context, cancel context.CancelCauseFunc, lease Lease, start time.Time) <-chan struct{} {
	end := start.Add(h.timeout)
	next := func() (at time.Time, byLease bool) {
		if d := lease.Deadline().Add(-h.margin); d.Before(end) {
			return d, true
		}
		return end, false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		at, _ := next()
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
			at, byLease := next()
			if wait := time.Until(at); wait > 0 {
				t.Reset(wait) // renewed meanwhile
				continue
			}
			if byLease {
				cancel(fmt.Errorf("%w (%w): %s before the lease's local deadline, which no renewal moved", errCut, ErrLeaseEnding, h.margin))
			} else {
				cancel(fmt.Errorf("%w: no answer within %s", errCut, h.timeout))
			}
			return
		}
	}()
	return done
}

// failed is Handle's error for a request that got no answer.
func (h *HTTPHandler) failed(ctx, rctx context.Context, err error) error {
	if ctx.Err() != nil { // the leadership ended: the job is interrupted
		return fmt.Errorf("jobs: http: request stopped: %w", context.Cause(ctx))
	}
	if cause := context.Cause(rctx); errors.Is(cause, errCut) {
		return cause
	}
	// A *url.Error quotes the URL (only its password stripped): keep what
	// went wrong, not where.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("jobs: http: no answer: %w", err)
}

// quote reads the start of an answer's body for an error message: no
// secret, valid UTF-8, no control characters, spaces collapsed, at most
// maxQuoted bytes (and "…" when there was more).
func (h *HTTPHandler) quote(body io.Reader) string {
	// Read past maxQuoted, so a secret that straddles the cut is scrubbed
	// whole before the cut.
	buf, _ := io.ReadAll(io.LimitReader(body, 4*maxQuoted))
	s := strings.ToValidUTF8(string(buf), "\uFFFD")
	for _, secret := range h.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// location is a redirect's target, as it may be quoted: scheme, host and
// path.
func (h *HTTPHandler) location(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode >= 400 {
		return ""
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return ""
	}
	return SafeURL(loc)
}

// drain reads what is left of a body, up to maxDrain, so the connection
// goes back to the pool; a longer body is cut by Close, and so is the
// connection.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
}

// HTTPStatusError is the HTTP handler's error for an answer that is not
// 2xx. It wraps ErrStaleToken for 409, ErrPermanent for a 4xx other than
// 408 and 429, and nothing (a failed attempt, retried) otherwise.
type HTTPStatusError struct {
	Status   int    // the answer's status code
	Body     string // the start of its body, sanitized and without secrets
	Token    int64  // the fencing token the request carried
	Location string // a redirect's target (scheme, host and path), if any
	// Wait is what a 429 or 503 answer's Retry-After asked for; negative
	// when it asked for nothing.
	Wait time.Duration
}

// RetryAfter is the wait the answer asked for before the next attempt
// (Retry-After on a 429 or 503), and whether it asked: the worker waits
// that long, within its Retry policy's Max (see RetryAfter).
func (e *HTTPStatusError) RetryAfter() (time.Duration, bool) { return e.Wait, e.Wait >= 0 }

func (e *HTTPStatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jobs: http: answered %d %s", e.Status, http.StatusText(e.Status))
	switch {
	case e.Status == http.StatusConflict:
		fmt.Fprintf(&b, ": the store rejected fencing token %d as stale", e.Token)
	case e.Location != "":
		fmt.Fprintf(&b, ": redirect to %s, not followed", e.Location)
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

// Unwrap says what the answer means to the worker.
func (e *HTTPStatusError) Unwrap() error {
	switch {
	case e.Status == http.StatusConflict:
		return ErrStaleToken
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return nil // the service asks to come back later
	case e.Status >= 400 && e.Status < 500:
		return ErrPermanent
	}
	return nil
}
