// Package prometheus holds the tests of the Prometheus alert rules
// (alerts.yml) and of the Grafana dashboard's queries, run with
// Prometheus's own code: its rule-file parser (rulefmt), its PromQL parser
// and engine, and the rule manager that evaluates alerting rules. They
// replace promtool, so checking the rules installs nothing and starts no
// Prometheus.
//
// It is a Go module of its own (go.mod here), so the daemon and the main
// module never depend on github.com/prometheus/prometheus; `make test`
// runs it after the main module's tests. The first run downloads and
// builds Prometheus's packages (about 2.5 minutes on 2 cores; cached
// afterwards).
//
// Guaranteed: alerts.yml parses and validates as Prometheus loads it; every
// test of alerts_test.yml (promtool's unit-test format, so `promtool test
// rules alerts_test.yml` runs it too) holds: each alert fires when it
// should, with its labels and annotations, and not in a healthy fleet;
// every Grafana query parses. Not covered: promtool's promql_expr_test
// blocks and other test-file fields (the runner refuses a file that has
// them rather than skip them), and Prometheus's features behind flags.
package prometheus
