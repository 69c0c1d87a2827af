package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockworker/lockworker/internal/testkit/browsertest"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

// postJSON sends body to path with the admin token and returns the
// status code and the answer.
func (w *worker) postJSON(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url(path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

// TestDashboardParkedKeys: a real replica parks two keys whose first job
// fails; its page lists them, with Retry and Skip buttons once the admin
// token is entered. Retry (the handler healed) runs the failing job again
// and the key's held jobs follow; Skip, with the reason typed on the
// page, dead-letters the failing job, releases the key's held jobs and
// is recorded in the history as the dashboard's. Over HTTP, the endpoints
// refuse a request without the token (401) and name a key not parked
// (404).
func TestDashboardParkedKeys(t *testing.T) {
	browsertest.Exec(t)
	r := redistest.Start(t, redistest.Options{})
	dir := t.TempDir()
	healed := filepath.Join(dir, "healed")
	script := filepath.Join(dir, "handler.sh")
	body := fmt.Sprintf("#!/bin/sh\n[ -e %q ] && exit 0\ngrep -qv fail\n", healed)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(fastEnv(r.URL()), "ADMIN_TOKEN="+testAdminToken, "LOG_LEVEL=info",
		"JOB_HANDLER=exec", "JOB_COMMAND="+script, "JOB_MAX_ATTEMPTS=1")
	w := startWorker(t, "parked-1", env...)
	poll.Until(t, 10*time.Second, "parked-1 leads", func() bool { return len(leaders(w)) == 1 })
	for _, job := range [][2]string{{"acct-1", "fail a"}, {"acct-1", "a1"}, {"acct-1", "a2"}, {"acct-2", "fail b"}, {"acct-2", "b1"}} {
		if err := runCLI(t, []string{"enqueue", "--key", job[0], job[1]}, env, &strings.Builder{}); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 20*time.Second, "two keys parked", func() bool { return queueStatus(t, env).Parked == 2 })

	if code := w.post(t, "/api/keys/skip", ""); code != http.StatusUnauthorized {
		t.Errorf("POST /api/keys/skip without the token: %d, want 401", code)
	}
	if code, answer := w.postJSON(t, "/api/keys/retry", `{"key":"acct-9"}`); code != http.StatusNotFound || !strings.Contains(answer, `key \"acct-9\" is not parked`) {
		t.Errorf("retry of a key not parked: %d %s, want 404 naming it", code, answer)
	}
	if code, answer := w.postJSON(t, "/api/keys/skip", `{"key":"acct\t9"}`); code != http.StatusBadRequest || !strings.Contains(answer, "key") {
		t.Errorf("skip of a key with a tab: %d %s, want 400 with the reason", code, answer)
	}
	if code, answer := w.postJSON(t, "/api/keys/skip", `{}`); code != http.StatusBadRequest || !strings.Contains(answer, "say which parked key") {
		t.Errorf("skip naming no key: %d %s, want 400 saying so", code, answer)
	}

	p := browsertest.Open(t, 1280, 900)
	p.Within(t, 15*time.Second, "the parked keys on the page",
		chromedp.Navigate(w.url("/")),
		browsertest.Visible(`#parked-body tr[data-key="acct-1"]`),
		browsertest.Visible(`#parked-body tr[data-key="acct-2"]`),
		browsertest.Visible(`#admin-open`),
	)
	if got := p.Eval(t, `document.querySelector('#parked-body tr[data-key="acct-1"]').textContent`); !strings.Contains(got, "acct-1") ||
		!strings.Contains(got, "exit code 1") {
		t.Errorf("acct-1's row: %q; want the key and its error's class", got)
	}
	p.Within(t, 5*time.Second, "entering the admin token",
		chromedp.Click(chromedp.CSS(`#admin-open`)),
		chromedp.SendKeys(chromedp.CSS(`#admin-token`), testAdminToken),
		chromedp.Click(chromedp.CSS(`#admin-form button[type=submit]`)),
		browsertest.Visible(`#parked-body tr[data-key="acct-1"] button.action[data-action="retrykey"]`),
		browsertest.Visible(`#skip-reason`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#parked-body tr[data-key="acct-1"]').textContent.includes('exited with code 1')`,
			chromedp.WithPollingMutation()),
	)
	p.Screenshot(t, "parked") // docs/dashboard-parked.png: the errors in full, the buttons

	if err := os.WriteFile(healed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.Within(t, 15*time.Second, "retrying acct-1 from the page",
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-1"] button.action[data-action="retrykey"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#parked-body tr[data-key="acct-1"]`)),
	)
	poll.Until(t, 15*time.Second, "acct-1's three jobs committed", func() bool { return queueStatus(t, env).Committed == 3 })

	p.Within(t, 15*time.Second, "skipping acct-2 from the page, with a reason",
		chromedp.SendKeys(chromedp.CSS(`#skip-reason`), "bad data upstream"),
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-2"] button.action[data-action="skipkey"]`)),
		browsertest.Visible(`#parked-body button.action.confirm[data-action="skipkey"]`),
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-2"] button.action[data-action="skipkey"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#parked-body tr[data-key="acct-2"]`)),
	)
	poll.Until(t, 15*time.Second, "acct-2's held job committed, its failing one dead", func() bool {
		st := queueStatus(t, env)
		return st.Committed == 4 && st.DeadLettered == 1 && st.Parked == 0 && st.Pending == 0
	})
	var skip *historyReport
	for _, h := range historyOf(t, env) {
		if h.Event == "skipped" {
			skip = &h
		}
	}
	if skip == nil || skip.Key == nil || *skip.Key != "acct-2" || !strings.HasPrefix(skip.By, "dashboard (127.0.0.1:") ||
		skip.Reason != "bad data upstream" {
		t.Fatalf("the history's skip: %+v; want acct-2's, by the dashboard, with the reason", skip)
	}
	var dead []deadLetterReport
	var out strings.Builder
	if err := runCLI(t, []string{"deadletters", "--json"}, env, &out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out.String()), &dead); err != nil || len(dead) != 1 || dead[0].Key != "acct-2" ||
		dead[0].ID != skip.JobID || dead[0].Reason != "bad data upstream" {
		t.Fatalf("dead letters: %v %+v", err, dead)
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}
