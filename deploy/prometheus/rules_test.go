package prometheus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"gopkg.in/yaml.v3"
)

const (
	alertsFile     = "alerts.yml"
	alertTestsFile = "alerts_test.yml"
	grafanaFile    = "../grafana/lockworker.json"
)

// TestAlertRulesParse: Prometheus's own rule-file parser accepts
// alerts.yml (what `promtool check rules` checks): the YAML, every
// expression, and the templates of the labels and annotations.
func TestAlertRulesParse(t *testing.T) {
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), promslog.NewNopLogger())
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) == 0 && (len(groups.Groups) == 0 || len(groups.Groups[0].Rules) == 0) {
		t.Fatalf("%s holds no rule", alertsFile)
	}
}

// TestAlertRuleUnitTests runs alerts_test.yml as `promtool test rules`
// would: each alert fires when it should, with the expected labels and
// annotations, and not in a healthy fleet.
func TestAlertRuleUnitTests(t *testing.T) {
	f := readTests(t, alertTestsFile)
	for _, g := range f.Tests {
		t.Run(g.Name, func(t *testing.T) {
			for _, err := range f.run(t.Context(), g) {
				t.Error(err)
			}
		})
	}
}

// TestRunnerCatchesWrongExpectations: the runner is no rubber stamp. With
// a firing alert expected in a healthy fleet, or no alert where one fires,
// or another annotation, it reports each case.
func TestRunnerCatchesWrongExpectations(t *testing.T) {
	f := readTests(t, alertTestsFile)
	var healthy, firing *testGroup
	for i := range f.Tests {
		g := &f.Tests[i]
		switch {
		case healthy == nil && !g.fires():
			healthy = g
		case firing == nil && g.fires():
			firing = g
		}
	}
	if healthy == nil || firing == nil {
		t.Fatalf("%s needs a test where nothing fires and one where an alert fires", alertTestsFile)
	}
	wrong := func(name string, g testGroup, mutate func(*alertTest)) {
		g.AlertRuleTests = slices.Clone(g.AlertRuleTests)
		for i := range g.AlertRuleTests {
			c := g.AlertRuleTests[i]
			c.ExpAlerts = slices.Clone(c.ExpAlerts)
			mutate(&c)
			g.AlertRuleTests[i] = c
		}
		if errs := f.run(t.Context(), g); len(errs) < len(g.AlertRuleTests) {
			t.Errorf("%s: the runner reported %d of %d wrong cases: %v", name, len(errs), len(g.AlertRuleTests), errs)
		}
	}
	wrong("a firing alert expected in "+healthy.Name, *healthy, func(c *alertTest) {
		c.ExpAlerts = append(c.ExpAlerts, expAlert{ExpLabels: map[string]string{"severity": "critical"}})
	})
	onlyFiring := *firing
	onlyFiring.AlertRuleTests = nil
	for _, c := range firing.AlertRuleTests {
		if len(c.ExpAlerts) > 0 {
			onlyFiring.AlertRuleTests = append(onlyFiring.AlertRuleTests, c)
		}
	}
	wrong("no alert expected in "+firing.Name, onlyFiring, func(c *alertTest) { c.ExpAlerts = nil })
	wrong("another summary expected in "+firing.Name, onlyFiring, func(c *alertTest) {
		for i, a := range c.ExpAlerts {
			ann := map[string]string{}
			for k, v := range a.ExpAnnotations {
				ann[k] = v
			}
			ann["summary"] += " (not this)"
			c.ExpAlerts[i].ExpAnnotations = ann
		}
	})
}

// TestGrafanaQueriesParse: Prometheus's PromQL parser accepts every query
// of the Grafana dashboard, with Grafana's $__rate_interval filled in.
func TestGrafanaQueriesParse(t *testing.T) {
	b, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	p, n := parser.NewParser(parser.Options{}), 0
	for _, panel := range d.Panels {
		for _, tg := range panel.Targets {
			n++
			if _, err := p.ParseExpr(strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m")); err != nil {
				t.Errorf("panel %q: %q: %v", panel.Title, tg.Expr, err)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no query", grafanaFile)
	}
}

// testFile is the part of promtool's unit-test file format that
// alerts_test.yml uses. Fields beyond these make readTests fail, so a
// test the runner does not understand is never skipped silently.
type testFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	Tests              []testGroup    `yaml:"tests"`
	dir                string
}

type testGroup struct {
	Name        string         `yaml:"name"`
	Interval    model.Duration `yaml:"interval"`
	InputSeries []struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	} `yaml:"input_series"`
	AlertRuleTests []alertTest `yaml:"alert_rule_test"`
}

type alertTest struct {
	EvalTime  model.Duration `yaml:"eval_time"`
	Alertname string         `yaml:"alertname"`
	ExpAlerts []expAlert     `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

// fires says some case of g expects an alert.
func (g testGroup) fires() bool {
	return slices.ContainsFunc(g.AlertRuleTests, func(c alertTest) bool { return len(c.ExpAlerts) > 0 })
}

func readTests(t *testing.T, path string) testFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f testFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(f.Tests) == 0 || len(f.RuleFiles) == 0 {
		t.Fatalf("%s names no rule file or no test", path)
	}
	if f.EvaluationInterval == 0 {
		f.EvaluationInterval = model.Duration(time.Minute) // promtool's default
	}
	f.dir = filepath.Dir(path)
	return f
}

// run evaluates the rule files over g's input series, as promtool's
// `test rules` does: from time 0, every evaluation_interval, up to the
// latest eval_time; the alerts of a case are those firing after the
// evaluation at or just before its eval_time. It returns one error per
// case whose firing alerts (labels and annotations) differ from the
// expected ones, and any error of loading or evaluating.
func (f testFile) run(ctx context.Context, g testGroup) []error {
	interval := g.Interval
	if interval == 0 {
		interval = f.EvaluationInterval
	}
	var load strings.Builder
	fmt.Fprintf(&load, "load %s\n", interval)
	for _, s := range g.InputSeries {
		fmt.Fprintf(&load, "  %s %s\n", s.Series, s.Values)
	}
	suite, err := promqltest.NewLazyLoader(load.String(), promqltest.LazyLoaderOpts{EnableAtModifier: true, EnableNegativeOffset: true})
	if err != nil {
		return []error{err}
	}
	defer suite.Close()
	eval := time.Duration(f.EvaluationInterval)
	suite.SubqueryInterval = eval
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      ctx,
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
	})
	files := make([]string, len(f.RuleFiles))
	for i, rf := range f.RuleFiles {
		files[i] = filepath.Join(f.dir, rf)
	}
	loaded, errs := m.LoadGroups(time.Duration(interval), labels.EmptyLabels(), "", nil, false, files...)
	if errs != nil {
		return errs
	}
	var groups []*rules.Group
	for _, name := range slices.Sorted(maps.Keys(loaded)) {
		groups = append(groups, loaded[name])
	}
	alerting := map[string][]*rules.AlertingRule{}
	for _, grp := range groups {
		for _, r := range grp.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true) // as promtool: no restore from a previous run to wait for
				alerting[ar.Name()] = append(alerting[ar.Name()], ar)
			}
		}
	}
	cases := slices.Clone(g.AlertRuleTests)
	slices.SortStableFunc(cases, func(a, b alertTest) int { return int(a.EvalTime - b.EvalTime) })
	var last model.Duration
	for _, c := range cases {
		last = max(last, c.EvalTime)
		if len(alerting[c.Alertname]) == 0 {
			errs = append(errs, fmt.Errorf("alertname %s: no such alerting rule in %v", c.Alertname, f.RuleFiles))
		}
	}
	start := time.Unix(0, 0).UTC()
	next := 0
	for ts := start; !ts.After(start.Add(time.Duration(last))); ts = ts.Add(eval) {
		var evalErrs []error
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				evalErrs = append(evalErrs, err)
				return
			}
			for _, grp := range groups {
				grp.Eval(suite.Context(), ts)
				for _, r := range grp.Rules() {
					if r.LastError() != nil {
						evalErrs = append(evalErrs, fmt.Errorf("rule %s at %s: %w", r.Name(), ts.Sub(start), r.LastError()))
					}
				}
			}
		})
		if len(evalErrs) > 0 {
			return append(errs, evalErrs...)
		}
		for ; next < len(cases) && time.Duration(cases[next].EvalTime) < ts.Add(eval).Sub(start); next++ {
			c := cases[next]
			var got, want []string
			for _, ar := range alerting[c.Alertname] {
				for _, a := range ar.ActiveAlerts() {
					if a.State == rules.StateFiring {
						got = append(got, a.Labels.String()+" "+a.Annotations.String())
					}
				}
			}
			for _, e := range c.ExpAlerts {
				l := map[string]string{labels.AlertName: c.Alertname}
				for k, v := range e.ExpLabels {
					l[k] = v
				}
				want = append(want, labels.FromMap(l).String()+" "+labels.FromMap(e.ExpAnnotations).String())
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				errs = append(errs, fmt.Errorf("alertname %s at %s:\n  want %q\n  got  %q", c.Alertname, c.EvalTime, want, got))
			}
		}
	}
	return errs
}
