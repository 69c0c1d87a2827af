package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// openStreamAs is openStream for a client that bears token.
func openStreamAs(t *testing.T, ctx context.Context, url, token string) *stream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /events as admin: %s", resp.Status)
	}
	return &stream{resp: resp, r: bufio.NewReader(resp.Body)}
}

// TestErrorsByClassWithoutToken: a reader without the admin token gets a
// dead letter's and a replica's error by its class only, on
// /api/snapshot, a stream's first frame and its pushes (the errors may
// quote a handler's output, and so a payload); with the token, the
// errors in full. Without ADMIN_TOKEN configured, nobody gets them.
func TestErrorsByClassWithoutToken(t *testing.T) {
	full := []string{"invalid invoice 7731", "no answer within 30s", "renew: lease lost"}
	classes := []string{`"class":"exit code 3"`, `"class":"timeout"`, `"lastErrorClass":"renew failed"`}
	check := func(name, out string, admin bool) {
		t.Helper()
		for _, c := range classes {
			if !strings.Contains(out, c) {
				t.Errorf("%s lacks %s:\n%s", name, c, out)
			}
		}
		for _, e := range full {
			if strings.Contains(out, e) != admin {
				t.Errorf("%s shows %q: %v, want %v:\n%s", name, e, !admin, admin, out)
			}
		}
	}
	d, src, _ := newTestDashboard(t, testAdminToken)
	h := d.Handler()
	check("GET /api/snapshot", do(h, "GET", "/api/snapshot", "").Body.String(), false)
	check("GET /api/snapshot with a wrong token", do(h, "GET", "/api/snapshot", strings.Repeat("x", len(testAdminToken))).Body.String(), false)
	check("GET /api/snapshot as admin", do(h, "GET", "/api/snapshot", testAdminToken).Body.String(), true)

	url, _, _ := served(t, d)
	anon := openStream(t, boundedCtx(t), url)
	admin := openStreamAs(t, boundedCtx(t), url, testAdminToken)
	check("the first event", anon.next(t).data, false)
	check("the first event as admin", admin.next(t).data, true)
	src.set(func(s *Snapshot) { s.Epoch++ })
	check("a pushed event", anon.next(t).data, false)
	check("a pushed event as admin", admin.next(t).data, true)

	off, _, _ := newTestDashboard(t, "")
	check("GET /api/snapshot, no ADMIN_TOKEN", do(off.Handler(), "GET", "/api/snapshot", testAdminToken).Body.String(), false)
}
