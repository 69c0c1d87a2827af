package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/testkit/browsertest"
	"github.com/lockworker/lockworker/internal/testkit/poll"
	"github.com/lockworker/lockworker/internal/testkit/redistest"
)

const (
	testAdminToken = "admin-token-0123456789abcdef"
	testJobsToken  = "jobs-token-0123456789abcdef"
)

func (w *worker) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", w.port, path) }

// post sends an action request with the given Authorization header ("" for
// none) and returns the status code.
func (w *worker) post(t *testing.T, path, auth string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestDashboardFleet: three real replicas, the page of one of them in a
// real chromium. It shows the leader and its token; after SIGTERM of the
// leader the highlighted leader and this replica's chart change on the page
// within a second, without a reload; without the admin token no action is
// offered and the HTTP actions answer 401; with it, the step-down button
// hands over, and a dead letter's requeue button (queue paused from the
// page) moves it back to the queue. No token shows anywhere.
func TestDashboardFleet(t *testing.T) {
	processTest(t)
	browsertest.Exec(t)
	r := redistest.Start(t, redistest.Options{})
	// A job whose payload is "fail" fails (grep finds no other line), into
	// the dead letters at once; the others succeed.
	env := append(fastEnv(r.URL()), "ADMIN_TOKEN="+testAdminToken, "JOBS_TOKEN="+testJobsToken, "LOG_LEVEL=info",
		"JOB_HANDLER=exec", "JOB_COMMAND=grep -qv fail", "JOB_MAX_ATTEMPTS=1", "JOB_ON_FAILURE=dead-letter")
	w1 := startWorker(t, "worker-1", env...)
	poll.Until(t, 10*time.Second, "worker-1 leads", func() bool { return len(leaders(w1)) == 1 })
	w2, w3 := startWorker(t, "worker-2", env...), startWorker(t, "worker-3", env...)
	for _, w := range []*worker{w2, w3} {
		poll.Until(t, 10*time.Second, w.name+" follows", func() bool {
			s, ok := w.status()
			return ok && s.State == "waiting_to_acquire_lock"
		})
	}
	enqueueN(t, env, 5)
	if err := runCLI(t, []string{"enqueue", "fail"}, env, io.Discard); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "5 jobs done, 1 dead letter", func() bool {
		st := queueStatus(t, env)
		return st.Committed == 5 && st.DeadLettered == 1
	})
	s1, _ := w1.status()

	p := browsertest.Open(t, 1280, 900)
	p.Within(t, 15*time.Second, "first load",
		chromedp.Navigate(w3.url("/")),
		browsertest.Visible(`#fleet-body tr.is-leader[data-worker="worker-1"]`),
		browsertest.Visible(`#chart g.state.current[data-state="waiting_to_acquire_lock"]`),
		browsertest.Visible(`#dead-body tr[data-job]`),
		browsertest.Visible(`#admin-open`),
	)
	if got := p.Eval(t, `document.getElementById('leader-token').textContent`); got != fmt.Sprintf("#%d", s1.Token) {
		t.Errorf("leader token shows %q, want #%d", got, s1.Token)
	}
	if n := p.Eval(t, `String(document.querySelectorAll('#fleet-body tr').length)`); n != "3" {
		t.Errorf("%s fleet rows, want 3", n)
	}
	if n := p.Eval(t, `String(document.querySelectorAll('button.action').length)`); n != "0" {
		t.Errorf("%s action buttons without the admin token, want none", n)
	}
	deadID := p.Eval(t, `document.querySelector('#dead-body tr[data-job]').dataset.job`)
	for _, path := range []string{"/api/stepdown", "/api/queue/pause", "/api/queue/resume", "/api/deadletters/" + deadID + "/requeue"} {
		for _, auth := range []string{"", "Bearer not-the-admin-token-at-all", "Bearer " + testJobsToken} {
			if code := w3.post(t, path, auth); code != http.StatusUnauthorized {
				t.Errorf("POST %s with Authorization %q: %d, want 401", path, auth, code)
			}
		}
	}
	if strings.Contains(p.Eval(t, `document.getElementById('recent').textContent`), "RELEASE_NOTICE") {
		t.Fatal("a release notice already on the page before the SIGTERM: the check below would prove nothing")
	}

	// SIGTERM of the leader: the page follows within the bound.
	p.Eval(t, `window.lwNoReload = 'still here'; 'ok'`)
	sent := time.Now()
	w1.signal(syscall.SIGTERM)
	p.Within(t, time.Second, "the handover reaching the page",
		chromedp.Poll[chromedp.Void](`(() => {
			const leader = document.querySelector('#fleet-body tr.is-leader');
			if (!leader || leader.dataset.worker === 'worker-1') return false;
			const cur = document.querySelector('#chart g.state.current');
			return (cur && cur.dataset.state === 'working') || document.getElementById('recent').textContent.includes('RELEASE_NOTICE');
		})()`, chromedp.WithPollingMutation()))
	t.Logf("the page showed the new leader and this replica's reaction %v after the SIGTERM", time.Since(sent).Round(time.Millisecond))
	if got := p.Eval(t, `String(window.lwNoReload)`); got != "still here" {
		t.Errorf("the page reloaded (marker %q)", got)
	}
	next := leaders(w2, w3)
	if len(next) != 1 {
		t.Fatalf("%d leaders after the SIGTERM", len(next))
	}
	ns, _ := next[0].status()
	p.Within(t, 5*time.Second, "the new leader's token",
		browsertest.Visible(fmt.Sprintf(`#fleet-body tr.is-leader[data-worker=%q]`, ns.WorkerID)),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById('leader-token').textContent === '#%d'`, ns.Token), chromedp.WithPollingMutation()),
		chromedp.Poll[chromedp.Void](`document.querySelector('#history li:first-child .reason-released') !== null`, chromedp.WithPollingMutation()),
	)
	if err, ok := w1.exited(5 * time.Second); !ok || err != nil {
		t.Fatalf("worker-1 after SIGTERM: exited=%v err=%v", ok, err)
	}
	w4 := startWorker(t, "worker-4", env...) // back to three

	// The admin token unlocks the actions; step down hands over.
	p.Within(t, 5*time.Second, "entering the admin token",
		chromedp.Click(chromedp.CSS(`#admin-open`)),
		chromedp.SendKeys(chromedp.CSS(`#admin-token`), testAdminToken),
		chromedp.Click(chromedp.CSS(`#admin-form button[type=submit]`)),
		browsertest.Visible(`button.action[data-action="stepdown"]`),
		browsertest.Visible(`button.action[data-action="pause"]`),
		browsertest.Visible(`#dead-body button.action[data-action="requeue"]`),
	)
	p.Within(t, 10*time.Second, "stepping down from the page",
		chromedp.Click(chromedp.CSS(`button.action[data-action="stepdown"]`)),
		browsertest.Visible(`button.action.confirm[data-action="stepdown"]`),
		chromedp.Click(chromedp.CSS(`button.action[data-action="stepdown"]`)),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => {
			const leader = document.querySelector('#fleet-body tr.is-leader');
			return leader && leader.dataset.worker !== %q &&
				document.querySelector('#history li:first-child .reason-stepped_down') !== null;
		})()`, ns.WorkerID), chromedp.WithPollingMutation()),
	)
	if after := leaders(w2, w3, w4); len(after) != 1 || after[0] == next[0] {
		t.Fatalf("after the step-down the leaders are %v", names(after))
	}

	// Pause from the page, then requeue the dead letter: it stays pending.
	p.Within(t, 10*time.Second, "pausing the queue and requeueing the dead letter",
		chromedp.Click(chromedp.CSS(`button.action[data-action="pause"]`)),
		browsertest.Visible(`#queue-paused`),
		browsertest.Visible(`button.action[data-action="resume"]`),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#dead-body tr[data-job=%q] button.action`, deadID))),
		chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf(`#dead-body tr[data-job=%q]`, deadID))),
		chromedp.Poll[chromedp.Void](`document.getElementById('queue-pending').textContent === '1'`, chromedp.WithPollingMutation()),
	)
	if st := queueStatus(t, env); !st.Paused || st.Pending != 1 || st.DeadLettered != 0 {
		t.Fatalf("after pause and requeue: %+v", st)
	}
	p.Screenshot(t, "admin")
	p.Within(t, 10*time.Second, "resuming: the requeued job runs (and fails again)",
		chromedp.Click(chromedp.CSS(`button.action[data-action="resume"]`)),
		chromedp.Poll[chromedp.Void](`document.getElementById('queue-paused').hidden &&
			document.getElementById('queue-pending').textContent === '0' &&
			document.querySelectorAll('#dead-body tr[data-job]').length === 1`, chromedp.WithPollingMutation()),
		chromedp.Click(chromedp.CSS(`#admin-lock`)),
		browsertest.Visible(`#admin-open`),
		browsertest.Visible(`#fleet-body tr[data-worker="worker-4"]`),
	)
	p.Eval(t, `document.getElementById('toasts').replaceChildren(); 'ok'`)
	p.Screenshot(t, "") // docs/dashboard.md's: three replicas, a handover and a step-down in the history

	noSecrets(t, p, w3, env)
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// noSecrets: neither token appears on the page, in its snapshot or event
// stream, in /status or in the registry's records.
func noSecrets(t *testing.T, p *browsertest.Page, w *worker, env []string) {
	t.Helper()
	places := map[string]string{
		"the page":      p.Eval(t, `document.documentElement.outerHTML`),
		"/api/snapshot": get(t, w.url("/api/snapshot")),
		"/status":       get(t, w.url("/status")),
		"/events":       firstEvent(t, w.url("/events")),
	}
	var out strings.Builder
	if err := runCLI(t, []string{"status", "--json"}, env, &out); err != nil {
		t.Fatal(err)
	}
	places["the registry (status --json)"] = out.String()
	for where, text := range places {
		if text == "" {
			t.Errorf("%s is empty: nothing checked", where)
		}
		for _, secret := range []string{testAdminToken, testJobsToken} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows a token", where)
			}
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstEvent reads the first snapshot event of an /events stream.
func firstEvent(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data
		}
	}
	t.Fatalf("no event on %s: %v", url, sc.Err())
	return ""
}

func names(ws []*worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.name)
	}
	return out
}

// TestDashboardPartitions: two real replicas share four partitions, the
// page of one in a real chromium. It lists every partition with the
// owner and token the replicas' /status give, a paused partition's
// pending jobs and how long the oldest has waited, and in the fleet how
// many partitions each replica owns; after a SIGTERM of the other
// replica, every partition goes to the one left, on the page too,
// without a reload.
func TestDashboardPartitions(t *testing.T) {
	processTest(t)
	browsertest.Exec(t)
	r := redistest.Start(t, redistest.Options{})
	env := partitionsEnv(r.URL(), 4, t.TempDir())
	a := startWorker(t, "dp-a", env...)
	b := startWorker(t, "dp-b", env...)
	shared(t, 4, 20*time.Second, a, b)
	if err := runCLI(t, []string{"pause", "--partition", "1"}, env, io.Discard); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := runCLI(t, []string{"enqueue", "--key", keyOf(1, 4), "x"}, env, io.Discard); err != nil {
			t.Fatal(err)
		}
	}

	// pageShows waits until the page's partitions and fleet rows are
	// those the replicas' /status give (rechecked as long as it waits).
	p := browsertest.Open(t, 1280, 1100)
	pageShows := func(what string, ws ...*worker) {
		t.Helper()
		poll.Until(t, 10*time.Second, what, func() bool {
			var rows []string
			owns := map[string]int{}
			for _, w := range ws {
				s, ok := w.status()
				if !ok {
					return false
				}
				for _, l := range s.Leads {
					rows = append(rows, fmt.Sprintf("%d %s #%d", l.Partition, w.name, l.Token))
				}
				owns[w.name] = len(s.Leads)
			}
			slices.Sort(rows)
			got := p.Eval(t, `[...document.querySelectorAll('#partitions-body tr')].map((tr) =>
				tr.dataset.partition + ' ' + tr.dataset.owner + ' ' + tr.children[2].textContent).join('\n')`)
			if got != strings.Join(rows, "\n") {
				return false
			}
			for name, n := range owns {
				if p.Eval(t, fmt.Sprintf(`(document.querySelector('#fleet-body tr[data-worker=%q] td.owned') || {}).textContent || ''`, name)) != fmt.Sprint(n) {
					return false
				}
			}
			return p.Eval(t, `String(document.querySelectorAll('#fleet-body tr[data-worker]').length)`) == fmt.Sprint(len(ws))
		})
	}
	p.Within(t, 15*time.Second, "first load",
		chromedp.Navigate(a.url("/")),
		browsertest.Visible(`#partitions-panel`),
		browsertest.Visible(`#partitions-body tr[data-partition="3"]`),
	)
	pageShows("the page's partitions and owners match /status", a, b)
	paused := `#partitions-body tr[data-partition="1"]`
	if got := p.Eval(t, `document.querySelector('`+paused+`').textContent`); !strings.Contains(got, "paused") {
		t.Errorf("partition 1's row does not say paused: %q", got)
	}
	if got := p.Eval(t, `document.querySelector('`+paused+` td:nth-child(4)').textContent`); got != "2" {
		t.Errorf("partition 1 shows %q pending, want 2", got)
	}
	if got := p.Eval(t, `document.querySelector('`+paused+` td.oldest').textContent`); !regexp.MustCompile(`^[0-9.]+(ms|s)$`).MatchString(got) {
		t.Errorf("partition 1's oldest pending job shows %q, want a wait", got)
	}
	if got := p.Eval(t, `document.getElementById('fleet-token-head').textContent`); got != "Partitions" {
		t.Errorf("the fleet's token column is headed %q with partitions, want Partitions", got)
	}
	p.Screenshot(t, "partitions")

	p.Eval(t, `window.lwNoReload = 'still here'; 'ok'`)
	b.signal(syscall.SIGTERM)
	if err, ok := b.exited(10 * time.Second); !ok || err != nil {
		t.Fatalf("dp-b after SIGTERM: exited=%v err=%v", ok, err)
	}
	shared(t, 4, 10*time.Second, a)
	pageShows("every partition on dp-a, on the page", a)
	if got := p.Eval(t, `String(window.lwNoReload)`); got != "still here" {
		t.Errorf("the page reloaded (marker %q)", got)
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestDashboardSchedules: a real replica leading two partitions, its page
// in a real chromium, with two schedules added by `lockworker schedule
// add` and a job delayed by an hour. The schedules table shows each one's
// name, partition (as `schedule list` says), when it ticks, key,
// catch-up and next tick, and the every-second one's last tick once it
// ticked, without a reload; the delayed job counts on the queue card and
// in its partition's row; the replica's /status gives the same last and
// next ticks, and its /metrics the ticks, periods and delayed jobs. No payload reaches the page or /api/snapshot, with or
// without the admin token.
func TestDashboardSchedules(t *testing.T) {
	browsertest.Exec(t)
	r := redistest.Start(t, redistest.Options{})
	env := append(partitionsEnv(r.URL(), 2, t.TempDir()), "ADMIN_TOKEN="+testAdminToken)
	a := startWorker(t, "ds-a", env...)
	shared(t, 2, 20*time.Second, a)
	const secret = "payload-secret-7731"
	cli(t, env, "schedule", "add", "beat", "--every", "1s", "--key", "s", secret)
	cli(t, env, "schedule", "add", "nightly", "--cron", "0 2 * * *", "--tz", "Europe/Paris", "--catch-up", "skip", secret)
	delayedKey := keyOf(1, 2)
	cli(t, env, "enqueue", "--in", "1h", "--key", delayedKey, secret)
	var list []figures.Schedule
	if err := json.Unmarshal([]byte(cli(t, env, "schedule", "list", "--json")), &list); err != nil || len(list) != 2 {
		t.Fatalf("schedule list --json: %+v, %v", list, err)
	}

	p := browsertest.Open(t, 1280, 1300)
	p.Within(t, 15*time.Second, "first load",
		chromedp.Navigate(a.url("/")),
		browsertest.Visible(`#schedules-body tr[data-schedule="nightly"]`),
		browsertest.Visible(`#schedules-body tr[data-schedule="beat"]`),
	)
	p.Eval(t, `window.lwNoReload = 'still here'; 'ok'`)
	cells := func(name string) []string {
		t.Helper()
		got := p.Eval(t, `[...document.querySelectorAll('#schedules-body tr[data-schedule="`+name+`"] td')].map((td) => td.textContent).join('|')`)
		return strings.Split(got, "|")
	}
	for _, s := range list {
		c := cells(s.Name)
		if len(c) != 7 || c[0] != s.Name || c[1] != fmt.Sprint(s.Partition) {
			t.Errorf("%s's row: %q, want its name and partition %d", s.Name, c, s.Partition)
			continue
		}
		want := map[string][]string{"beat": {"every 1s", "s", "once"}, "nightly": {"cron 0 2 * * * (Europe/Paris)", "—", "skip"}}[s.Name]
		if !slices.Equal(c[2:5], want) {
			t.Errorf("%s's row: when, key, catch-up %q, want %q", s.Name, c[2:5], want)
		}
		if !regexp.MustCompile(`^\d\d:\d\d:\d\d · (in \d|due$)`).MatchString(c[6]) {
			t.Errorf("%s's next tick shows %q", s.Name, c[6])
		}
	}
	if c := cells("nightly"); c[5] != "not yet" {
		t.Errorf("nightly's last tick shows %q before its first tick", c[5])
	}
	p.Within(t, 15*time.Second, "beat's last tick on the page",
		chromedp.Poll[chromedp.Void](`(() => {
			const td = document.querySelector('#schedules-body tr[data-schedule="beat"] td.last-tick');
			return !!td && / ago$/.test(td.textContent);
		})()`, chromedp.WithPollingMutation()))
	if got := p.Eval(t, `String(window.lwNoReload)`); got != "still here" {
		t.Errorf("the page reloaded (marker %q)", got)
	}
	// The daemon's /status says the same: each schedule's last and next tick.
	st, ok := a.status()
	if !ok || len(st.Schedules) != 2 || st.Schedules[0].Name != "beat" || st.Schedules[0].LastTick.IsZero() ||
		!st.Schedules[0].NextTick.After(st.Schedules[0].LastTick) || st.Schedules[0].PeriodMs != 1000 ||
		st.Schedules[1].Name != "nightly" || !st.Schedules[1].LastTick.IsZero() || st.Schedules[1].NextTick.IsZero() {
		t.Errorf("/status schedules: %+v (ok %v); want beat's last and next tick, nightly's next", st.Schedules, ok)
	}
	// And its /metrics: the schedules' ticks and period, the delayed job.
	scraped := get(t, a.url("/metrics"))
	for _, want := range []string{`lockworker_schedule_last_tick_timestamp_seconds{schedule="beat"} `,
		`lockworker_schedule_next_tick_timestamp_seconds{schedule="nightly"} `, `lockworker_schedule_period_seconds{schedule="beat"} 1` + "\n",
		`lockworker_schedule_period_seconds{schedule="nightly"} 86400` + "\n", "lockworker_jobs_delayed 1\n",
		`lockworker_partition_jobs_delayed{partition="1"} 1` + "\n", `lockworker_partition_jobs_delayed{partition="0"} 0` + "\n"} {
		if !strings.Contains(scraped, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if got := p.Eval(t, `document.getElementById('queue-delayed').textContent`); got != "1" {
		t.Errorf("the queue card shows %q delayed, want 1", got)
	}
	if got := p.Eval(t, `document.querySelector('#partitions-body tr[data-partition="1"] td.delayed').textContent`); got != "1" {
		t.Errorf("partition 1 shows %q delayed, want 1", got)
	}
	if got := p.Eval(t, `document.querySelector('#partitions-body tr[data-partition="0"] td.delayed').textContent`); got != "0" {
		t.Errorf("partition 0 shows %q delayed, want 0", got)
	}
	p.Screenshot(t, "schedules")
	if strings.Contains(p.Eval(t, `document.documentElement.outerHTML`), secret) {
		t.Error("a payload is on the page")
	}
	for _, auth := range []string{"", "Bearer " + testAdminToken} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, a.url("/api/snapshot"), nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if !strings.Contains(string(body), `"name":"beat"`) || strings.Contains(string(body), secret) {
			t.Errorf("/api/snapshot with Authorization %q: schedules without their payload wanted:\n%s", auth, body)
		}
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestSchedulesOverHTTP: on a real replica with ADMIN_TOKEN, POST and
// DELETE /api/schedules add and remove a schedule that `lockworker
// schedule list` then shows or not, and answer 401 without the admin
// token (none, a wrong one, the jobs token), changing nothing; on a
// replica of the same fleet without ADMIN_TOKEN they do not exist (404,
// the dashboard mounted at / included), whatever the request bears.
func TestSchedulesOverHTTP(t *testing.T) {
	r := redistest.Start(t, redistest.Options{})
	env := append(fastEnv(r.URL()), "JOBS_TOKEN="+testJobsToken)
	with := startWorker(t, "sh-admin", append(env, "ADMIN_TOKEN="+testAdminToken)...)
	without := startWorker(t, "sh-plain", env...)
	for _, w := range []*worker{with, without} {
		poll.Until(t, 10*time.Second, w.name+" answers", func() bool { _, ok := w.status(); return ok })
	}
	call := func(w *worker, method, path, token, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, w.url(path), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	names := func() []string {
		t.Helper()
		var list []figures.Schedule
		if err := json.Unmarshal([]byte(cli(t, env, "schedule", "list", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range list {
			out = append(out, s.Name)
		}
		return out
	}
	const add = `{"name":"web","every":"1m","key":"reports","payload":"p","catchUp":"skip"}`
	for _, tok := range []string{"", "not-the-admin-token-at-all", testJobsToken} {
		if code := call(with, "POST", "/api/schedules", tok, add); code != http.StatusUnauthorized {
			t.Errorf("POST /api/schedules bearing %q: %d, want 401", tok, code)
		}
	}
	for _, tok := range []string{"", testJobsToken, testAdminToken} {
		if code := call(without, "POST", "/api/schedules", tok, add); code != http.StatusNotFound {
			t.Errorf("POST /api/schedules without ADMIN_TOKEN, bearing %q: %d, want 404", tok, code)
		}
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("schedules after refused adds: %v", got)
	}
	if code := call(with, "POST", "/api/schedules", testAdminToken, add); code != http.StatusCreated {
		t.Fatalf("POST /api/schedules with the admin token: %d, want 201", code)
	}
	if got := names(); !slices.Equal(got, []string{"web"}) {
		t.Fatalf("schedules after the add: %v, want web", got)
	}
	for _, tok := range []string{"", testJobsToken} {
		if code := call(with, "DELETE", "/api/schedules/web", tok, ""); code != http.StatusUnauthorized {
			t.Errorf("DELETE bearing %q: %d, want 401", tok, code)
		}
	}
	for _, tok := range []string{"", testAdminToken} {
		if code := call(without, "DELETE", "/api/schedules/web", tok, ""); code != http.StatusNotFound {
			t.Errorf("DELETE without ADMIN_TOKEN, bearing %q: %d, want 404", tok, code)
		}
	}
	if got := names(); !slices.Equal(got, []string{"web"}) {
		t.Fatalf("schedules after refused removes: %v, want web", got)
	}
	if code := call(with, "DELETE", "/api/schedules/web", testAdminToken, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE with the admin token: %d, want 204", code)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("schedules after the remove: %v, want none", got)
	}
}
