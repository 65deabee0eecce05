package deploy

import (
	"bytes"
	"cmp"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	scrapeFile     = "prometheus/scrape.yaml"
	alertTestsFile = "prometheus/fsctl-alerts_test.yaml"
	// instanceLabel is the pod label, as Prometheus names it, that the rules and the dashboard
	// find the instances by.
	instanceLabel = "app_kubernetes_io_name"
)

// perPodLabels are the scraped labels whose values name one pod (its IP, name, ReplicaSet):
// the alert tests' series may use other pods than the simulated ones.
var perPodLabels = []string{"instance", "pod", "pod_template_hash"}

// scrapeJob is the part of a Prometheus scrape job this test reads, its relabeling decoded by
// Prometheus's own relabel package.
type scrapeJob struct {
	JobName        string                  `yaml:"job_name"`
	ScrapeInterval string                  `yaml:"scrape_interval"`
	MetricsPath    string                  `yaml:"metrics_path"`
	KubernetesSD   []struct{ Role string } `yaml:"kubernetes_sd_configs"`
	RelabelConfigs []*relabel.Config       `yaml:"relabel_configs"`
}

// readScrapeJob reads the shipped scrape job: one, discovering Kubernetes pods.
func readScrapeJob(t *testing.T) scrapeJob {
	t.Helper()
	b, err := os.ReadFile(scrapeFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []scrapeJob `yaml:"scrape_configs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", scrapeFile, err)
	}
	if len(cfg.ScrapeConfigs) != 1 {
		t.Fatalf("%s: %d scrape jobs, want 1", scrapeFile, len(cfg.ScrapeConfigs))
	}
	job := cfg.ScrapeConfigs[0]
	if len(job.KubernetesSD) != 1 || job.KubernetesSD[0].Role != "pod" {
		t.Fatalf("%s: job %s discovers %+v, want Kubernetes pods", scrapeFile, job.JobName, job.KubernetesSD)
	}
	for i, rc := range job.RelabelConfigs {
		if err := rc.Validate(model.UTF8Validation); err != nil {
			t.Fatalf("%s: relabel_configs[%d]: %v", scrapeFile, i, err)
		}
	}
	return job
}

// sanitize is how Kubernetes discovery turns a label or annotation name into a label name.
var sanitize = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// discoveredTargets returns what Prometheus's Kubernetes discovery (role pod) gives a scrape job
// for one running pod of tpl, named owner-hash-x7k2p in the default namespace: a target per
// container port, with the pod's meta labels, as discovery/kubernetes/pod.go makes them. A pod
// carries its template's labels and annotations and, made by a Deployment's ReplicaSet, its
// pod-template-hash label. Every workload's pod is made so; a Job's pod differs in its controller
// and that label, and none of the Jobs' pods carries the scrape annotation that would keep it.
func discoveredTargets(tpl *metav1.ObjectMeta, spec *corev1.PodSpec, owner, hash, ip string) []map[string]string {
	podName := owner + "-" + hash + "-x7k2p"
	meta := map[string]string{
		"__meta_kubernetes_namespace":           "default",
		"__meta_kubernetes_pod_name":            podName,
		"__meta_kubernetes_pod_ip":              ip,
		"__meta_kubernetes_pod_ready":           "true",
		"__meta_kubernetes_pod_phase":           "Running",
		"__meta_kubernetes_pod_node_name":       "node-1",
		"__meta_kubernetes_pod_host_ip":         "10.0.0.1",
		"__meta_kubernetes_pod_uid":             "uid-" + podName,
		"__meta_kubernetes_pod_controller_kind": "ReplicaSet",
		"__meta_kubernetes_pod_controller_name": owner + "-" + hash,
	}
	podLabels := map[string]string{"pod-template-hash": hash}
	for k, v := range tpl.Labels {
		podLabels[k] = v
	}
	for k, v := range podLabels {
		meta["__meta_kubernetes_pod_label_"+sanitize.ReplaceAllString(k, "_")] = v
		meta["__meta_kubernetes_pod_labelpresent_"+sanitize.ReplaceAllString(k, "_")] = "true"
	}
	for k, v := range tpl.Annotations {
		meta["__meta_kubernetes_pod_annotation_"+sanitize.ReplaceAllString(k, "_")] = v
		meta["__meta_kubernetes_pod_annotationpresent_"+sanitize.ReplaceAllString(k, "_")] = "true"
	}
	var out []map[string]string
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			t := map[string]string{
				model.AddressLabel:                              net.JoinHostPort(ip, strconv.Itoa(int(p.ContainerPort))),
				"__meta_kubernetes_pod_container_name":          c.Name,
				"__meta_kubernetes_pod_container_image":         c.Image,
				"__meta_kubernetes_pod_container_port_name":     p.Name,
				"__meta_kubernetes_pod_container_port_number":   strconv.Itoa(int(p.ContainerPort)),
				"__meta_kubernetes_pod_container_port_protocol": string(cmp.Or(p.Protocol, corev1.ProtocolTCP)),
				"__meta_kubernetes_pod_container_init":          "false",
			}
			for k, v := range meta {
				t[k] = v
			}
			out = append(out, t)
		}
	}
	return out
}

// scrapedTarget is one target the job scrapes: where, and the labels its series carry.
type scrapedTarget struct {
	owner, address, path string
	labels               labels.Labels
}

// scrapedTargets relabels every workload pod of the manifests through job as Prometheus does
// (scrape.PopulateLabels): job, path and scheme first, the relabeling, the meta labels dropped,
// instance from the address. Targets with equal labels are one, as in Prometheus's scrape pool.
func scrapedTargets(t *testing.T, job scrapeJob) []scrapedTarget {
	t.Helper()
	var out []scrapedTarget
	for i, p := range pods(loadManifests(t)) {
		name := p.owner[strings.Index(p.owner, "/")+1:]
		hash := fmt.Sprintf("%x", 0x5f7c9d0+i)
		for _, d := range discoveredTargets(p.meta, p.spec, name, hash, fmt.Sprintf("10.1.0.%d", i+2)) {
			lb := labels.NewBuilder(labels.FromMap(d))
			lb.Set(model.JobLabel, job.JobName)
			lb.Set(model.MetricsPathLabel, cmp.Or(job.MetricsPath, "/metrics"))
			lb.Set(model.SchemeLabel, "http")
			if !relabel.ProcessBuilder(lb, job.RelabelConfigs...) {
				continue
			}
			st := scrapedTarget{owner: p.owner, address: lb.Get(model.AddressLabel), path: lb.Get(model.MetricsPathLabel)}
			if lb.Get(model.InstanceLabel) == "" {
				lb.Set(model.InstanceLabel, st.address)
			}
			lb.Range(func(l labels.Label) {
				if strings.HasPrefix(l.Name, "__") {
					lb.Del(l.Name)
				}
			})
			st.labels = lb.Labels()
			if !slices.ContainsFunc(out, func(o scrapedTarget) bool { return labels.Equal(o.labels, st.labels) }) {
				out = append(out, st)
			}
		}
	}
	return out
}

// TestScrapeJobFindsEveryInstance relabels the manifests' pods through the shipped scrape job:
// each checkout pod is scraped once, at the port and path its annotations name and --metrics-addr
// serves, labelled with its app name; no other pod is.
func TestScrapeJobFindsEveryInstance(t *testing.T) {
	targets := scrapedTargets(t, readScrapeJob(t))
	var owners []string
	for _, st := range targets {
		owners = append(owners, st.owner)
		if _, port, _ := net.SplitHostPort(st.address); port != "9090" || st.path != "/metrics" {
			t.Errorf("%s: scraped at %s%s, want port 9090 (--metrics-addr) and /metrics", st.owner, st.address, st.path)
		}
		if st.labels.Get(instanceLabel) != serviceName {
			t.Errorf("%s: scraped as %s, want %s=%q", st.owner, st.labels, instanceLabel, serviceName)
		}
		st.labels.Range(func(l labels.Label) {
			if !slices.Contains(targetLabels, l.Name) {
				t.Errorf("%s: label %s is missing from targetLabels, which the queries' label check allows", st.owner, l.Name)
			}
		})
	}
	slices.Sort(owners)
	if want := []string{"Deployment/" + apiName, "Deployment/" + consumerName}; !slices.Equal(owners, want) {
		t.Errorf("scraped pods of %v, want one each of %v", owners, want)
	}
}

// upSelectors returns the selectors of up in expr.
func upSelectors(t *testing.T, expr string) []*parser.VectorSelector {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name == "up" {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// matches reports whether vs selects the up series of ls.
func matches(vs *parser.VectorSelector, ls labels.Labels) bool {
	series := labels.NewBuilder(ls).Set(model.MetricNameLabel, "up").Labels()
	for _, m := range vs.LabelMatchers {
		if !m.Matches(series.Get(m.Name)) {
			return false
		}
	}
	return true
}

// TestInstanceQueriesSelectScrapedInstances: FsctlInstanceDown and the dashboard's up query
// select the up series of every instance the shipped scrape job finds (up{job="fsctl"} selected
// none of them, so the alert could never fire).
func TestInstanceQueriesSelectScrapedInstances(t *testing.T) {
	targets := scrapedTargets(t, readScrapeJob(t))
	exprs := map[string]string{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "FsctlInstanceDown" {
				exprs["rule "+r.Alert] = r.Expr
			}
		}
	}
	for _, p := range readDashboard(t).panels() {
		for _, tg := range p.Targets {
			if expr := grafanaVars.Replace(tg.Expr); len(upSelectors(t, expr)) > 0 {
				exprs["panel "+p.Title] = expr
			}
		}
	}
	if len(exprs) != 2 {
		t.Fatalf("queries of up: %v, want FsctlInstanceDown's and the dashboard's", exprs)
	}
	for where, expr := range exprs {
		for _, vs := range upSelectors(t, expr) {
			for _, st := range targets {
				if !matches(vs, st.labels) {
					t.Errorf("%s: %s does not select %s's up%s", where, vs, st.owner, st.labels)
				}
			}
		}
	}
}

// alertTests is the part of the promtool unit test file this test reads.
type alertTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name        string `yaml:"name"`
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestAlertUnitTestsCoverEveryRule checks the promtool unit tests (run by make promtool-test)
// from here: they load the rules file, expect every rule to fire at its own severity at least
// once, and feed FsctlInstanceDown the up series the shipped scrape job produces (the same
// labels, pod-specific values aside).
func TestAlertUnitTestsCoverEveryRule(t *testing.T) {
	b, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var at alertTests
	if err := yaml.Unmarshal(b, &at); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	if !slices.Equal(at.RuleFiles, []string{"fsctl-alerts.yaml"}) {
		t.Errorf("%s: rule_files %v, want the rules file beside it", alertTestsFile, at.RuleFiles)
	}
	fired := map[string]bool{} // alertname/severity
	var ups []labels.Labels
	for _, tc := range at.Tests {
		for _, s := range tc.InputSeries {
			ls, err := parser.NewParser(parser.Options{}).ParseMetric(s.Series)
			if err != nil {
				t.Errorf("%s: series %q: %v", tc.Name, s.Series, err)
				continue
			}
			if ls.Get(model.MetricNameLabel) == "up" {
				ups = append(ups, ls)
			}
		}
		for _, art := range tc.AlertRuleTest {
			for _, a := range art.ExpAlerts {
				fired[art.Alertname+"/"+a.ExpLabels["severity"]] = true
			}
		}
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if !fired[r.Alert+"/"+r.Labels["severity"]] {
				t.Errorf("%s: no test expects %s to fire at severity %s", alertTestsFile, r.Alert, r.Labels["severity"])
			}
		}
	}
	for _, st := range scrapedTargets(t, readScrapeJob(t)) {
		if !slices.ContainsFunc(ups, func(up labels.Labels) bool { return sameTarget(up, st.labels) }) {
			t.Errorf("%s: no input series up%s, the series the scrape job makes of %s", alertTestsFile, st.labels, st.owner)
		}
	}
}

// sameTarget reports whether the up series has the scraped target's labels, and their values
// but for the labels that name one pod.
func sameTarget(up, target labels.Labels) bool {
	up = labels.NewBuilder(up).Del(model.MetricNameLabel).Labels()
	if up.Len() != target.Len() {
		return false
	}
	same := true
	target.Range(func(l labels.Label) {
		if !up.Has(l.Name) || (!slices.Contains(perPodLabels, l.Name) && up.Get(l.Name) != l.Value) {
			same = false
		}
	})
	return same
}
