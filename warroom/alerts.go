package warroom

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// Alert levels.
const (
	Warn = "warn"
	Crit = "crit"
)

// Rule is one alert threshold: the metric crosses Warn or Crit (above them, or below them when
// Below is set). A zero threshold is not checked. With For, the live dashboard fires the rule only
// once its condition has held that long, so a blip (a payment on its way to PostgreSQL shows as a
// unit of drift for a moment) does not page anyone; a single snapshot (--once) reports the
// condition as it stands.
type Rule struct {
	Metric string        `yaml:"metric" json:"metric"`
	Warn   float64       `yaml:"warn" json:"warn,omitempty"`
	Crit   float64       `yaml:"crit" json:"crit,omitempty"`
	Below  bool          `yaml:"below" json:"below,omitempty"`
	For    time.Duration `yaml:"for" json:"for,omitempty"`
}

// AlertConfig is the alerts file: the rules the dashboard colours panels and logs events by.
type AlertConfig struct {
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Alert is a rule that fires on a snapshot.
type Alert struct {
	Metric    string  `json:"metric"`
	Level     string  `json:"level"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Below     bool    `json:"below,omitempty"`
}

// String reads like a log line: "crit latency_p99_ms 1200 ≥ 1000".
func (a Alert) String() string {
	op := "≥"
	if a.Below {
		op = "≤"
	}
	return fmt.Sprintf("%s %s %s %s %s", a.Level, a.Metric, num(a.Value), op, num(a.Threshold))
}

// metricDocs names every metric a rule can watch; metricValue computes them.
var metricDocs = map[string]string{
	"latency_p50_ms":        "purchase latency p50 over the window, ms",
	"latency_p99_ms":        "purchase latency p99 over the window, ms",
	"errors_per_sec":        "purchase answers that are server errors, per second",
	"rate_limited_per_sec":  "purchases refused by rate limits, per second",
	"not_admitted_per_sec":  "purchases refused for lack of admission, per second",
	"queue_depth":           "buyers waiting in the room",
	"wait_seconds":          "estimated wait of the last buyer in the queue",
	"consumer_lag":          "orders published but not yet consumed, all partitions",
	"dead_letters":          "messages on the dead-letter topic",
	"drift_units":           "largest |redis stock + holds - (quantity - paid)| over the items",
	"in_flight":             "redis holds not yet pending in PostgreSQL",
	"breaker":               "payment breaker: 0 closed, 1 half-open, 2 open",
	"payment_decline_ratio": "declined share of pay answers over the window",
	"payment_error_ratio":   "failed share of pay answers over the window",
	"seconds_to_sold_out":   "shortest time to sold out over the items (use below:)",
	"sources_down":          "data sources down (" + strconv.Itoa(DownAfter) + " probes in a row missed)",
}

// DefaultAlerts are the thresholds used when no alerts file is given; examples/warroom-alerts.yaml
// holds the same rules.
func DefaultAlerts() AlertConfig {
	return AlertConfig{Rules: []Rule{
		{Metric: "latency_p99_ms", Warn: 250, Crit: 1000},
		{Metric: "errors_per_sec", Warn: 1, Crit: 10},
		{Metric: "consumer_lag", Warn: 1000, Crit: 10000},
		{Metric: "dead_letters", Warn: 1},
		{Metric: "drift_units", Crit: 1, For: 3 * time.Second},
		{Metric: "breaker", Warn: 1, Crit: 2},
		{Metric: "payment_decline_ratio", Warn: 0.2, Crit: 0.5},
		{Metric: "payment_error_ratio", Warn: 0.05, Crit: 0.2},
		{Metric: "wait_seconds", Warn: 120, Crit: 600},
		{Metric: "sources_down", Warn: 1, Crit: 3},
	}}
}

// LoadAlerts reads an alerts file. A file that cannot be read is os.ReadFile's error; one that
// is read but wrong is a *yamlfield.Error naming the file, line and field at fault.
func LoadAlerts(path string) (AlertConfig, error) {
	return yamlfield.Load(path, ParseAlerts)
}

// ParseAlerts parses an alerts document: unknown fields and metrics, and a crit threshold on the
// wrong side of warn, are *yamlfield.Errors that name their line. An empty document has no rules.
func ParseAlerts(b []byte) (AlertConfig, error) {
	var c AlertConfig
	doc, err := yamlfield.Decode(b, &c)
	if err != nil {
		return AlertConfig{}, err
	}
	at := func(field, format string, args ...any) error {
		fe := yamlfield.Errorf(field, format, args...)
		fe.Line = yamlfield.Line(doc, field)
		return fe
	}
	for i, r := range c.Rules {
		rule := fmt.Sprintf("rules[%d]", i)
		if _, ok := metricDocs[r.Metric]; !ok {
			hint := ""
			if near := yamlfield.Suggest(r.Metric, MetricNames()); near != "" {
				hint = "did you mean " + near + "? "
			}
			return AlertConfig{}, at(rule+".metric", "%q is not a known metric (%sknown: %s)", r.Metric, hint, strings.Join(MetricNames(), ", "))
		}
		if r.Warn == 0 && r.Crit == 0 {
			return AlertConfig{}, at(rule, "%s needs warn or crit", r.Metric)
		}
		if r.Warn != 0 && r.Crit != 0 && (r.Crit < r.Warn) != r.Below {
			return AlertConfig{}, at(rule+".crit", "%s is on the wrong side of warn %s", num(r.Crit), num(r.Warn))
		}
	}
	return c, nil
}

// MetricNames lists the metrics a rule can watch, sorted.
func MetricNames() []string {
	names := make([]string, 0, len(metricDocs))
	for n := range metricDocs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Evaluate returns the rules whose condition holds on s, worst first, ignoring For (one snapshot
// has no history); a metric whose source is not read does not fire (its source's own state is what
// sources_down counts).
func Evaluate(c AlertConfig, s *Snapshot) []Alert { return evaluate(c, s, nil) }

// Alerter evaluates rules over a timeline of snapshots, honouring each rule's For.
type Alerter struct {
	cfg AlertConfig
	// since is when each rule's condition started to hold, per level ("<rule>/<level>").
	since map[string]time.Time
}

// NewAlerter returns an Alerter of the rules.
func NewAlerter(c AlertConfig) *Alerter { return &Alerter{cfg: c, since: map[string]time.Time{}} }

// Evaluate returns the rules firing on s, the next snapshot of the timeline.
func (a *Alerter) Evaluate(s *Snapshot) []Alert { return evaluate(a.cfg, s, a.since) }

// evaluate checks every rule on s; with since (a timeline) a rule with For fires only once its
// condition has held that long at that level or worse.
func evaluate(c AlertConfig, s *Snapshot, since map[string]time.Time) []Alert {
	var out []Alert
	for i, r := range c.Rules {
		v, ok := metricValue(r.Metric, s)
		held := false
		for _, lv := range []struct {
			name string
			th   float64
		}{{Crit, r.Crit}, {Warn, r.Warn}} {
			key := fmt.Sprintf("%d/%s", i, lv.name)
			if !ok || lv.th == 0 || !((!r.Below && v >= lv.th) || (r.Below && v <= lv.th)) {
				if since != nil {
					delete(since, key)
				}
				continue
			}
			if since != nil && r.For > 0 {
				first, seen := since[key]
				if !seen {
					since[key], first = s.At, s.At
				}
				if s.At.Sub(first) < r.For {
					continue
				}
			}
			if !held {
				out = append(out, Alert{Metric: r.Metric, Level: lv.name, Value: v, Threshold: lv.th, Below: r.Below})
				held = true
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Alert) int {
		if a.Level == b.Level {
			return 0
		}
		if a.Level == Crit {
			return -1
		}
		return 1
	})
	return out
}

func metricValue(name string, s *Snapshot) (float64, bool) {
	d := s.Derived
	switch name {
	case "latency_p50_ms":
		return d.LatencyP50MS, s.Traffic.OK() && d.LatencyCount > 0
	case "latency_p99_ms":
		return d.LatencyP99MS, s.Traffic.OK() && d.LatencyCount > 0
	case "errors_per_sec":
		return d.OutcomesPerSec["errors"], s.Traffic.OK() && d.WindowSeconds > 0
	case "rate_limited_per_sec":
		return d.OutcomesPerSec["rate_limited"], s.Traffic.OK() && d.WindowSeconds > 0
	case "not_admitted_per_sec":
		return d.OutcomesPerSec["not_admitted"], s.Traffic.OK() && d.WindowSeconds > 0
	case "queue_depth":
		return s.Admission.Data.QueueDepth, s.Admission.OK()
	case "wait_seconds":
		return s.Admission.Data.WaitSeconds, s.Admission.OK()
	case "consumer_lag":
		return float64(s.Pipeline.Data.Lag), s.Pipeline.OK()
	case "dead_letters":
		return float64(s.Pipeline.Data.DeadLetters), s.Pipeline.OK()
	case "drift_units":
		return float64(d.MaxDrift), s.Items.OK() && s.Orders.OK()
	case "in_flight":
		return float64(d.InFlight), s.Items.OK() && s.Orders.OK()
	case "breaker":
		return breakerLevel(s.Payment.Data.Breaker), s.Payment.OK()
	case "payment_decline_ratio":
		return d.PaymentDeclineRatio, s.Payment.OK()
	case "payment_error_ratio":
		return d.PaymentErrorRatio, s.Payment.OK()
	case "seconds_to_sold_out":
		best := -1.0
		for _, it := range d.Items {
			if it.SecondsToSoldOut >= 0 && (best < 0 || it.SecondsToSoldOut < best) {
				best = it.SecondsToSoldOut
			}
		}
		return best, best >= 0
	case "sources_down":
		n := 0
		for _, r := range s.Readings() {
			if r.State == Down {
				n++
			}
		}
		return float64(n), true
	}
	return 0, false
}

func breakerLevel(s string) float64 {
	switch s {
	case "half-open":
		return 1
	case "open":
		return 2
	}
	return 0
}
