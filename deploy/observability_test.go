package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockworker/lockworker/internal/jobs/figures"
	"github.com/lockworker/lockworker/internal/leader"
	"github.com/lockworker/lockworker/internal/metrics"
)

const (
	alertsFile     = "prometheus/alerts.yml"
	alertTestsFile = "prometheus/alerts_test.yml"
	grafanaFile    = "grafana/lockworker.json"
)

// promtool finds Debian's promtool (package prometheus; `make test`
// installs it), or skips saying how to get it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed, so the alert rules are not checked: apt-get install -y prometheus (make test does)")
	}
	return p
}

// TestAlertRules: promtool accepts the rules, and its unit tests show each
// alert firing when it should and not in a healthy fleet.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertTestsFile}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertTestsCoverEveryAlert: each alert of alerts.yml is expected to
// fire in at least one promtool unit test.
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
			t.Errorf("no promtool test expects %s to fire", r.Alert)
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

// exposed is every series name lockworker's /metrics serves.
func exposed(t *testing.T) map[string]bool {
	t.Helper()
	m, err := metrics.New(metrics.Config{States: []string{"idle", "working"}, Version: "v0", GoVersion: "go"})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Watch(metrics.Sources{
		Snapshot: func() metrics.Snapshot { return metrics.Snapshot{} },
		Queue:    func(context.Context) (figures.Queue, error) { return figures.Queue{}, nil },
		RedisOK:  func() bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
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

// TestGrafanaQueriesParse: promtool parses every query of the Grafana
// dashboard (as recording rules, with Grafana's $__rate_interval filled
// in).
func TestGrafanaQueriesParse(t *testing.T) {
	bin := promtool(t)
	type rec struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rec
	exprs := grafanaExprs(t)
	for i, title := range slices.Sorted(maps.Keys(exprs)) {
		for j, e := range exprs[title] {
			rules = append(rules, rec{Record: fmt.Sprintf("grafana:panel%d_%d", i, j), Expr: strings.ReplaceAll(e, "$__rate_interval", "5m")})
		}
	}
	body, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "grafana", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "grafana_rules.yml")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool does not parse the Grafana queries: %v\n%s", err, out)
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
