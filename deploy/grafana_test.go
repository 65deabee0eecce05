package deploy

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/server"
	"github.com/fsctl/fsctl/warroom"
)

const (
	dashboardFile = "grafana/fsctl-sale.json"
	rulesFile     = "prometheus/fsctl-alerts.yaml"
	readmeFile    = "grafana/README.md"
	warroomFile   = "../examples/warroom-alerts.yaml"
)

// blastMetrics maps the series fsctl blast remote-writes (blast.MetricNames, a histogram as its
// _bucket, _sum and _count series) to their labels: burst and shard on each (with job
// fsctl-blast), outcome on the requests.
func blastMetrics() map[string][]string {
	out := map[string][]string{}
	for _, name := range blast.MetricNames() {
		out[name] = []string{"burst", "shard"}
		if name == blast.MetricRequests {
			out[name] = append(out[name], "outcome")
		}
	}
	return out
}

// targetLabels are the labels Prometheus adds to every scraped series; up is its own series.
// Beyond job and instance, the shipped scrape job (prometheus/scrape.yaml) adds the pod's
// namespace, name and labels (TestScrapeJobFindsEveryInstance keeps this list complete).
var targetLabels = []string{"job", "instance", "namespace", "pod", "pod_template_hash",
	"app_kubernetes_io_name", "app_kubernetes_io_component"}

// noEquivalent are the war-room metrics the rules file cannot mirror, each named in its comments
// and in the README.
var noEquivalent = []string{"drift_units", "sources_down"}

// knownMetrics maps every metric a query may select to its labels: the server's own list, blast's,
// and Prometheus's up.
func knownMetrics(t *testing.T) map[string][]string {
	t.Helper()
	known := server.MetricLabels()
	if len(known) < 20 {
		t.Fatalf("server.MetricLabels() lists %d metrics; the server exports far more", len(known))
	}
	for name, ls := range blastMetrics() {
		known[name] = ls
	}
	known["up"] = nil
	return known
}

// checkSelectors parses expr and checks that every metric it selects is known, with labels it has,
// and that a route matcher names the purchase route the server really labels.
func checkSelectors(t *testing.T, where, expr string, known map[string][]string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return nil
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name, ls, ok := metricOf(vs.Name, known)
		if !ok {
			t.Errorf("%s: selects %q, which neither the server nor blast exports", where, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name == model.MetricNameLabel:
			case m.Name == "le" && strings.HasSuffix(vs.Name, "_bucket"):
			case !slices.Contains(ls, m.Name) && !slices.Contains(targetLabels, m.Name):
				t.Errorf("%s: %s has no label %q (labels: %v)", where, name, m.Name, ls)
			case m.Name == "route" && !m.Matches(server.PurchaseRoute):
				t.Errorf("%s: route matcher %s does not match the purchase route %q", where, m, server.PurchaseRoute)
			}
		}
		return nil
	})
	return e
}

// metricOf finds the metric a selected series belongs to: itself, or the histogram whose
// _bucket, _sum or _count it is.
func metricOf(series string, known map[string][]string) (string, []string, bool) {
	if ls, ok := known[series]; ok {
		return series, ls, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok {
			if ls, ok := known[base]; ok {
				return base, ls, true
			}
		}
	}
	return "", nil, false
}

// dashboard is the part of the Grafana model the test reads.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	UID           string
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panels flattens the rows.
func (d dashboard) panels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// labelValues is a Grafana variable query of a label's values on a metric.
var labelValues = regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`)

// grafanaVars are Grafana's and the dashboard's template variables, with a value each that makes
// the query valid PromQL.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "1m", "${__rate_interval}", "1m", "$__interval", "1m", "$__range", "30m",
	"${sale}", "sale-1", "$sale", "sale-1",
)

// TestDashboardQueriesSelectExportedMetrics checks the dashboard's model and that every query
// parses and selects only metrics (and labels) the server or blast exports.
func TestDashboardQueriesSelectExportedMetrics(t *testing.T) {
	d := readDashboard(t)
	known := knownMetrics(t)
	if d.SchemaVersion < 36 || d.UID == "" {
		t.Errorf("schemaVersion %d, uid %q: want a current schema and a stable uid", d.SchemaVersion, d.UID)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" && (v.Type != "datasource" || v.Query != "prometheus") {
			t.Errorf("variable datasource: type %q query %v, want a prometheus data source variable", v.Type, v.Query)
		}
	}
	if vars["datasource"] == "" || vars["sale"] != "query" {
		t.Errorf("template variables %v: want datasource and a sale query", vars)
	}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		if m := labelValues.FindStringSubmatch(q); m != nil {
			if ls, ok := known[m[1]]; !ok || !slices.Contains(ls, m[2]) {
				t.Errorf("variable %s: %s lists label %q of %s, which the server does not export", v.Name, q, m[2], m[1])
			}
		} else if v.Type == "query" {
			t.Errorf("variable %s: query %v is not label_values(metric, label)", v.Name, v.Query)
		}
	}
	ids, titles := map[int]bool{}, map[string]bool{}
	exprs := 0
	for _, p := range d.panels() {
		if ids[p.ID] || titles[p.Title] {
			t.Errorf("panel %d %q: id or title used twice", p.ID, p.Title)
		}
		ids[p.ID], titles[p.Title] = true, true
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %q with %d targets, want ${datasource} and a query", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: a target's datasource is %q, want ${datasource}", p.Title, tg.Datasource.UID)
			}
			expr := grafanaVars.Replace(tg.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: %q uses a variable the dashboard does not define", p.Title, tg.Expr)
				continue
			}
			checkSelectors(t, "panel "+p.Title, expr, known)
			exprs++
		}
	}
	if exprs < 20 {
		t.Errorf("%d queries: the dashboard lost its panels", exprs)
	}
}

// TestReadmeListsEveryPanel keeps the README's panel list in step with the dashboard.
func TestReadmeListsEveryPanel(t *testing.T) {
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, p := range readDashboard(t).panels() {
		if p.Type != "row" && !strings.Contains(readme, "**"+p.Title+"**") {
			t.Errorf("%s does not list panel **%s**", readmeFile, p.Title)
		}
	}
	for _, m := range noEquivalent {
		if !strings.Contains(readme, m) {
			t.Errorf("%s does not say why %s has no alert", readmeFile, m)
		}
	}
}

func readRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rgs, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), log)
	for _, err := range errs {
		t.Errorf("%s: %v", rulesFile, err)
	}
	if rgs == nil {
		t.FailNow()
	}
	return rgs
}

// TestAlertRulesParse checks the rules file with Prometheus's own rule parser, and that every rule
// selects exported metrics and carries what a pager needs.
func TestAlertRulesParse(t *testing.T) {
	known := knownMetrics(t)
	groups := readRules(t).Groups
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			n++
			where := g.Name + "/" + r.Alert
			if r.Alert == "" {
				t.Errorf("%s: a recording rule %q; this file holds alerts", g.Name, r.Record)
			}
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", where, sev)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", where, a)
				}
			}
			checkSelectors(t, where, r.Expr, known)
		}
	}
	for _, want := range []string{"FsctlInstanceDown", "FsctlNotReady", "FsctlOrdersDeadLettered", "FsctlConsumerLagGrowing", "FsctlMixedVersions"} {
		if !slices.ContainsFunc(groups, func(g rulefmt.RuleGroup) bool {
			return slices.ContainsFunc(g.Rules, func(r rulefmt.Rule) bool { return r.Alert == want })
		}) {
			t.Errorf("no alert %s", want)
		}
	}
	if n < 20 {
		t.Errorf("%d rules: the file lost its rules", n)
	}
}

// TestAlertThresholdsMatchWarroom checks that for every rule of the war room's alerts file the
// rules file has a warning at its warn and a critical at its crit threshold (expr "... >= N"),
// waiting at least as long as it does, or says why there is no Prometheus equivalent; and that no
// rule claims a war-room metric or level the war room does not have.
func TestAlertThresholdsMatchWarroom(t *testing.T) {
	wr, err := warroom.LoadAlerts(warroomFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	type level struct{ metric, severity string }
	got := map[level][]rulefmt.Rule{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if m := r.Labels["warroom_metric"]; m != "" {
				k := level{m, r.Labels["severity"]}
				got[k] = append(got[k], r)
			}
		}
	}
	wanted := map[level]bool{}
	for _, w := range wr.Rules {
		if slices.Contains(noEquivalent, w.Metric) {
			if !regexp.MustCompile(`(?m)^#.*\b` + w.Metric + `\b`).Match(raw) {
				t.Errorf("%s: war-room metric %s has no alert and no comment saying why", rulesFile, w.Metric)
			}
			continue
		}
		if w.Below {
			t.Errorf("war-room rule %s fires below its threshold; this test compares >= rules only", w.Metric)
		}
		for _, lv := range []struct {
			severity string
			th       float64
		}{{"warning", w.Warn}, {"critical", w.Crit}} {
			if lv.th == 0 {
				continue
			}
			k := level{w.Metric, lv.severity}
			wanted[k] = true
			rules := got[k]
			if len(rules) != 1 {
				t.Errorf("%s %s (threshold %v): %d rules, want exactly 1", w.Metric, lv.severity, lv.th, len(rules))
				continue
			}
			r := rules[0]
			if th, ok := threshold(t, r.Expr); !ok || th != lv.th {
				t.Errorf("%s %s: expr %q compares against %v, war room's threshold is %v", w.Metric, lv.severity, r.Expr, th, lv.th)
			}
			if time.Duration(r.For) < w.For {
				t.Errorf("%s %s: for %v, shorter than the war room's %v", w.Metric, lv.severity, time.Duration(r.For), w.For)
			}
		}
	}
	for k := range got {
		if !wanted[k] {
			t.Errorf("a %s rule claims war-room metric %s, which the war room's file does not alert on at that level", k.severity, k.metric)
		}
	}
}

// threshold returns N of an expr "... >= N".
func threshold(t *testing.T, expr string) (float64, bool) {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return 0, false
	}
	b, ok := e.(*parser.BinaryExpr)
	if !ok || b.Op != parser.GTE {
		return 0, false
	}
	n, ok := b.RHS.(*parser.NumberLiteral)
	if !ok {
		return 0, false
	}
	return n.Val, true
}
