package dashboard

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/roster"
	"github.com/lockworker/lockworker/internal/testkit/browsertest"
)

// browserPage is a chromium tab on a dashboard served over HTTP with Run
// going.
type browserPage struct {
	*browsertest.Page
	url string
}

// openBrowser serves d and opens a headless chromium tab on it. Cleanup
// closes the browser, then stops Run (which ends the streams), then the
// server.
func openBrowser(t *testing.T, d *Dashboard, width, height int) *browserPage {
	t.Helper()
	browsertest.Exec(t) // skip before starting anything
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	runCtx, stopRun := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(runCtx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(func() { stopRun(); wg.Wait() })
	return &browserPage{Page: browsertest.Open(t, width, height), url: srv.URL + "/"}
}

var visible = browsertest.Visible

// TestBrowser loads the page in a real chromium: the leader and its token
// show, a change of the source reaches the page without a reload within a
// second, no action is offered without the admin token, a wrong token is
// refused, and with the right one the step-down button reaches Actions.
func TestBrowser(t *testing.T) {
	src := newFakeSource(sampleSnapshot(time.Now()))
	acts := newFakeActions()
	d, err := New(Config{Source: src, Actions: acts, AdminToken: testAdminToken, MinInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := openBrowser(t, d, 1280, 800)

	p.Within(t, 10*time.Second, "first load",
		chromedp.Navigate(p.url),
		visible(`#fleet-body tr.is-leader[data-worker="lockworker-2"]`),
		visible(`#chart g.state.current[data-state="waiting_to_acquire_lock"]`),
		visible(`#admin-open`),
	)
	if got := p.Eval(t, `document.getElementById('leader-token').textContent`); got != "#42" {
		t.Errorf("leader token shows %q, want #42", got)
	}
	if got := p.Eval(t, `document.querySelector('#fleet-body tr.is-leader .token-cell').textContent`); got != "#42" {
		t.Errorf("leader row token shows %q, want #42", got)
	}
	if n := p.Eval(t, `String(document.querySelectorAll('button.action').length)`); n != "0" {
		t.Errorf("%s action buttons without an admin token, want none", n)
	}
	if got := p.Eval(t, `document.querySelector('#lanes-body tr[data-partition="0"]').textContent`); got != "0waiting_to_acquire_lock—held by lockworker-2 (token 42) until 12:00:03.000" {
		t.Errorf("the lane's row shows %q, want its state and why it does not lead", got)
	}
	// Without the token, errors by their class: they may quote a payload.
	deadRow := `document.querySelector('#dead-body tr[data-job="01JD8ZQ3M6K2V7C4XN9B5T1HRA"]').textContent`
	if got := p.Eval(t, deadRow); !strings.Contains(got, "exit code 3") || strings.Contains(got, "invoice") {
		t.Errorf("the dead letter's row without the admin token: %q; want its class, not its error", got)
	}
	parkedRow := `document.querySelector('#parked-body tr[data-key="acct-1"]').textContent`
	if got := p.Eval(t, parkedRow); !strings.Contains(got, "http 422") || strings.Contains(got, "iban") || !strings.Contains(got, "01JD8ZX4B2N6R8T0V2X4Z6B8DA") {
		t.Errorf("the parked key's row without the admin token: %q; want its job and its error's class, not its error", got)
	}
	if got := p.Eval(t, `document.querySelector('#fleet-body tr[data-worker="lockworker-3"]').textContent`); !strings.Contains(got, "renew failed") || strings.Contains(got, "lease lost") {
		t.Errorf("lockworker-3's row without the admin token: %q; want its error's class", got)
	}

	// A new leader: this replica. The page must follow without a reload.
	p.Eval(t, `window.lwNoReload = 'still here'; 'ok'`)
	changed := time.Now()
	src.set(func(s *Snapshot) { becomeLeader(s, time.Now()) })
	p.Within(t, time.Second, "the change reaching the page",
		visible(`#chart g.state.current[data-state="working"]`),
		visible(`#fleet-body tr.is-leader[data-worker="lockworker-1"]`),
		visible(`#history li.current[data-token="43"]`),
	)
	t.Logf("the change showed on the page %v after the source changed", time.Since(changed).Round(time.Millisecond))
	if got := p.Eval(t, `String(window.lwNoReload)`); got != "still here" {
		t.Errorf("the page reloaded (marker %q)", got)
	}
	if got := p.Eval(t, `document.getElementById('leader-token').textContent`); got != "#43" {
		t.Errorf("leader token shows %q after the change, want #43", got)
	}
	if got := p.Eval(t, `document.querySelector('#lanes-body tr.is-leader[data-state="working"]').textContent`); got != "0working#43leading" {
		t.Errorf("the leading lane's row shows %q", got)
	}
	if got := p.Eval(t, `document.querySelector('#chart g.edge.taken-0').dataset.to`); got != "working" {
		t.Errorf("the newest marked arrow goes to %q, want working", got)
	}
	p.Screenshot(t, "sample") // a sample fleet, nothing unlocked (docs/dashboard.md's comes from cmd/lockworker's real fleet)

	// A wrong token is refused and unlocks nothing.
	p.Within(t, 5*time.Second, "entering a wrong token",
		chromedp.Click(chromedp.CSS(`#admin-open`)),
		chromedp.SendKeys(chromedp.CSS(`#admin-token`), "not-the-admin-token"),
		chromedp.Click(chromedp.CSS(`#admin-form button[type=submit]`)),
		visible(`#admin-error`),
	)
	if got := p.Eval(t, `document.getElementById('admin-error').textContent`); got != "Wrong token" {
		t.Errorf("after a wrong token the form says %q", got)
	}
	if n := p.Eval(t, `String(document.querySelectorAll('button.action').length)`); n != "0" {
		t.Errorf("%s action buttons after a wrong token, want none", n)
	}

	// The right token: actions appear; step down takes two clicks.
	p.Within(t, 5*time.Second, "entering the admin token",
		chromedp.SendKeys(chromedp.CSS(`#admin-token`), testAdminToken),
		chromedp.Click(chromedp.CSS(`#admin-form button[type=submit]`)),
		visible(`button.action[data-action="stepdown"]`),
		visible(`#dead-body button.action[data-action="requeue"]`),
		visible(`button.action[data-action="pause"]`),
	)
	if got := p.Eval(t, `sessionStorage.getItem('lockworker.adminToken')`); got != testAdminToken {
		t.Errorf("the token is not kept in sessionStorage (got %q)", got)
	}
	p.Within(t, 5*time.Second, "the errors in full with the admin token",
		chromedp.Poll[chromedp.Void](deadRow+`.includes('invalid invoice 7731')`, chromedp.WithPollingMutation()),
	)
	p.Screenshot(t, "admin")
	p.Within(t, 5*time.Second, "clicking step down twice",
		chromedp.Click(chromedp.CSS(`button.action[data-action="stepdown"]`)),
		visible(`button.action.confirm[data-action="stepdown"]`),
		chromedp.Click(chromedp.CSS(`button.action[data-action="stepdown"]`)),
	)
	waitCall(t, acts, "stepdown:0:43") // the token the page shows, lockworker-1's since becomeLeader

	p.Within(t, 5*time.Second, "requeueing a dead letter",
		chromedp.Click(chromedp.CSS(`#dead-body tr[data-job="01JD8YV0TQ6R1P2W8E5G3K9MZC"] button.action`)),
	)
	waitCall(t, acts, "requeue:01JD8YV0TQ6R1P2W8E5G3K9MZC")

	// A parked key: its error in full now; Retry at once, Skip on the
	// second click, with the reason typed in the panel.
	p.Within(t, 5*time.Second, "the parked key's error in full with the admin token",
		chromedp.Poll[chromedp.Void](parkedRow+`.includes('iban DE89')`, chromedp.WithPollingMutation()),
	)
	p.Within(t, 5*time.Second, "retrying the parked key",
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-1"] button.action[data-action="retrykey"]`)),
	)
	waitCall(t, acts, "retry:acct-1:01JD8ZX4B2N6R8T0V2X4Z6B8DA")
	p.Within(t, 5*time.Second, "skipping the parked key with a reason",
		chromedp.SendKeys(chromedp.CSS(`#skip-reason`), "iban fixed by hand"),
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-1"] button.action[data-action="skipkey"]`)),
		visible(`#parked-body button.action.confirm[data-action="skipkey"]`),
		chromedp.Click(chromedp.CSS(`#parked-body tr[data-key="acct-1"] button.action[data-action="skipkey"]`)),
	)
	waitCallLike(t, acts, regexp.MustCompile(`^skip:acct-1:01JD8ZX4B2N6R8T0V2X4Z6B8DA:dashboard \(127\.0\.0\.1:\d+\):iban fixed by hand$`))

	// A paused queue says so, and offers Resume instead of Pause.
	src.set(func(s *Snapshot) { s.Queue.Paused = true })
	p.Within(t, time.Second, "the paused queue showing",
		visible(`#queue-paused`),
		visible(`button.action[data-action="resume"]`),
	)
	if got := p.Eval(t, `document.getElementById('queue-paused').textContent`); got != "paused" {
		t.Errorf("paused badge says %q", got)
	}

	p.Within(t, 5*time.Second, "locking", chromedp.Click(chromedp.CSS(`#admin-lock`)), visible(`#admin-open`))
	if n := p.Eval(t, `String(document.querySelectorAll('button.action').length)`); n != "0" {
		t.Errorf("%s action buttons after locking, want none", n)
	}

	var errs []string
	for _, e := range p.ConsoleErrors() {
		// The wrong token's check answered 401 on purpose.
		if !strings.Contains(e, "status of 401") {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Errorf("the page logged errors (a CSP violation shows here):\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserNoAdminToken: a dashboard without an admin token offers no
// way in at all, data that looks like markup stays text, and the page
// still works at a phone's width.
func TestBrowserNoAdminToken(t *testing.T) {
	snap := sampleSnapshot(time.Now())
	const markup = `<img src=x onerror="window.lwXss=1"><b>bold</b>`
	snap.Replicas = append(snap.Replicas, roster.Record{WorkerID: markup, Host: markup, State: markup, LastError: markup})
	snap.Queue.DeadLetters[0].Error = markup
	snap.History[1].PreviousEnded = EndReason(markup)
	snap.Schedules = []figures.Schedule{{Name: "beat", Every: "1m0s", Key: markup, CatchUp: "once", PeriodMs: 60_000}}
	src := newFakeSource(snap)
	d, err := New(Config{Source: src, Actions: newFakeActions()})
	if err != nil {
		t.Fatal(err)
	}
	p := openBrowser(t, d, 420, 900)
	p.Within(t, 10*time.Second, "first load",
		chromedp.Navigate(p.url),
		visible(`#fleet-body tr.is-leader[data-worker="lockworker-2"]`),
		visible(`#chart g.state.current`),
	)
	if got := p.Eval(t, `String(document.querySelectorAll(':is(#fleet-body, #dead-body, #history, #recent, #schedules-body) :is(img, b)').length)`); got != "0" {
		t.Errorf("data became markup: %s elements", got)
	}
	if got := p.Eval(t, `String(document.querySelector('#fleet-body tr:last-child .worker').textContent.startsWith('<img'))`); got != "true" {
		t.Error("a worker ID that looks like markup is not shown as text")
	}
	if got := p.Eval(t, `document.querySelector('#schedules-body tr[data-schedule="beat"]').textContent`); !strings.Contains(got, "every 1m0s<img") {
		t.Errorf("a schedule's key that looks like markup is not shown as text: %q", got)
	}
	if got := p.Eval(t, `String(window.lwXss)`); got != "undefined" {
		t.Errorf("data ran as script: window.lwXss = %s", got)
	}
	if got := p.Eval(t, `String(document.getElementById('admin').hidden)`); got != "true" {
		t.Errorf("admin area hidden = %s, want true", got)
	}
	if n := p.Eval(t, `String(document.querySelectorAll('button.action').length)`); n != "0" {
		t.Errorf("%s action buttons, want none", n)
	}
	if w := p.Eval(t, `String(document.documentElement.scrollWidth <= window.innerWidth)`); w != "true" {
		t.Errorf("the page scrolls sideways at 420px")
	}
	p.Screenshot(t, "narrow")
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}

	// The policy holds in a real browser: an inline script (what an
	// injection would smuggle in) does not run, and the refusal is logged
	// where the checks above look.
	p.Eval(t, `const s = document.createElement('script'); s.textContent = 'window.lwInline = 1';
		document.body.append(s); 'ok'`)
	p.WaitConsole(t, "Content Security Policy", 5*time.Second)
	if got := p.Eval(t, `String(window.lwInline)`); got != "undefined" {
		t.Errorf("an inline script ran (window.lwInline = %s)", got)
	}
}

// waitCall waits, bounded, for Actions to be called with want.
func waitCall(t *testing.T, acts *fakeActions, want string) {
	t.Helper()
	waitCallLike(t, acts, regexp.MustCompile("^"+regexp.QuoteMeta(want)+"$"))
}

// waitCallLike waits, bounded, for a call of Actions that want matches.
func waitCallLike(t *testing.T, acts *fakeActions, want *regexp.Regexp) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-acts.called:
			if want.MatchString(got) {
				return
			}
		case <-timeout:
			t.Fatalf("Actions never got %q; calls: %v", want, acts.calls())
		}
	}
}

// TestBrowserFallsBackToPolling: with every stream taken, the page still
// shows the fleet and its changes, from /api/snapshot, and says it polls;
// once a stream is free again it goes live.
func TestBrowserFallsBackToPolling(t *testing.T) {
	src := newFakeSource(sampleSnapshot(time.Now()))
	d, err := New(Config{Source: src, MaxStreams: 1, MinInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	blocker, _ := d.hub.subscribe("203.0.113.9", false) // the only anonymous stream
	p := openBrowser(t, d, 1280, 800)
	p.Within(t, 10*time.Second, "first load, polling",
		chromedp.Navigate(p.url),
		visible(`#fleet-body tr.is-leader[data-worker="lockworker-2"]`),
	)
	if got := p.Eval(t, `document.getElementById('conn-text').textContent`); got != "Polling" {
		t.Errorf("connection shows %q, want Polling", got)
	}
	src.set(func(s *Snapshot) { becomeLeader(s, time.Now()) })
	p.Within(t, 10*time.Second, "a change reaching the polling page",
		visible(`#fleet-body tr.is-leader[data-worker="lockworker-1"]`),
	)
	d.hub.unsubscribe(blocker)
	p.Within(t, 35*time.Second, "the stream again (the page backs off up to 30s)",
		chromedp.Poll[chromedp.Void](`document.getElementById('conn-text').textContent === 'Live'`),
	)
}
