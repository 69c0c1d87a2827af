package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/metrics"
	"github.com/lockworker/lockworker/internal/roster"
)

const (
	alertsFile     = "prometheus/alerts.yml"
	alertTestsFile = "prometheus/alerts_test.yml"
	grafanaFile    = "grafana/lockworker.json"
)

// The rules' syntax, their unit tests (alerts_test.yml) and the Grafana
// queries' syntax are checked with Prometheus's own code in
// deploy/prometheus, a Go module of its own; these tests need only
// lockworker's metrics.

// TestAlertTestsCoverEveryAlert: each alert of alerts.yml is expected to
// fire in at least one unit test of alerts_test.yml.
func TestAlertTestsCoverEveryAlert(t *testing.T) {
	fired := map[string]bool{}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal([]byte(readDeploy(t, alertTestsFile)), &tests); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	for _, r := range alertRules(t) {
		if !fired[r.Alert] {
			t.Errorf("no test of %s expects %s to fire", alertTestsFile, r.Alert)
		}
	}
}

type rule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(readDeploy(t, alertsFile)), &f); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("no alert rules")
	}
	return out
}

// grafanaExprs returns every query of the Grafana dashboard by panel.
func grafanaExprs(t *testing.T) map[string][]string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readDeploy(t, grafanaFile)), &d); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// exposed is every series name lockworker's /metrics serves, with
// partitions (a replica leading one, another paused).
func exposed(t *testing.T) map[string]bool {
	t.Helper()
	m, err := metrics.New(metrics.Config{States: []string{"idle", "working"}, Version: "v0", GoVersion: "go"})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(metrics.Sources{
		Snapshot: func() metrics.Snapshot { return metrics.Snapshot{Leads: []roster.Owned{{Partition: 0, Token: 1}}} },
		Queue:    func(context.Context) (figures.Queue, error) { return figures.Queue{}, nil },
		Partitions: func(context.Context) ([]figures.Queue, error) {
			return []figures.Queue{{}, {Paused: true}}, nil
		},
		RedisOK:  func() bool { return true },
		Eviction: func() map[string]string { return map[string]string{"node": "noeviction"} },
		Schedules: func(context.Context) ([]figures.Schedule, error) {
			return []figures.Schedule{{Name: "s", LastTick: time.Unix(60, 0), NextTick: time.Unix(120, 0), PeriodMs: 60_000}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m.WatchSlots(func() int { return 16 }, func() int { return 1 })
	m.Transition("idle", "working")
	m.ObserveAcquire(time.Millisecond, leader.Acquired)
	m.ObserveRenew(time.Millisecond, leader.Renewed)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	names := map[string]bool{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}

var metricName = regexp.MustCompile(`\blockworker_[a-z_]+\b`)

// TestAlertsAndGrafanaUseRealMetrics: every lockworker metric the alerts
// and the Grafana dashboard query is one the daemon serves.
func TestAlertsAndGrafanaUseRealMetrics(t *testing.T) {
	have := exposed(t)
	check := func(where, expr string) {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q queries no lockworker metric", where, expr)
		}
		for _, n := range names {
			if !have[n] {
				t.Errorf("%s: %s is not a metric lockworker serves", where, n)
			}
		}
	}
	for _, r := range alertRules(t) {
		check(alertsFile+" "+r.Alert, r.Expr)
	}
	for title, exprs := range grafanaExprs(t) {
		for _, e := range exprs {
			check(grafanaFile+" panel "+title, e)
		}
	}
}

func readDeploy(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
