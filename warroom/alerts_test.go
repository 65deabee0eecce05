package warroom

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExampleAlertsFileIsTheDefaults(t *testing.T) {
	c, err := LoadAlerts("../examples/warroom-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, DefaultAlerts()) {
		t.Fatalf("examples/warroom-alerts.yaml and DefaultAlerts differ:\n%+v\n%+v", c, DefaultAlerts())
	}
}

func TestMalformedAlertsNameLineAndField(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", "rules:\n  - metric: consumer_lag\n    warn: 5\n    critical: 10\n", "line 4: rules[0].critical: unknown key (known: metric, warn, crit, below, for)"},
		{"near miss", "rules:\n  - metric: consumer_lag\n    wran: 5\n", "line 3: rules[0].wran: unknown key (did you mean warn? known: metric, warn, crit, below, for)"},
		{"unknown metric", "rules:\n  - metric: consumer_lag\n    warn: 5\n  - metric: p99\n    warn: 1\n", `line 4: rules[1].metric: "p99" is not a known metric (known: breaker,`},
		{"metric near miss", "rules:\n  - metric: consumer_lga\n    warn: 5\n", `"consumer_lga" is not a known metric (did you mean consumer_lag? known:`},
		{"no threshold", "rules:\n  - metric: dead_letters\n", "line 2: rules[0]: dead_letters needs warn or crit"},
		{"crit below warn", "rules:\n  - metric: queue_depth\n    warn: 100\n    crit: 10\n", "line 4: rules[0].crit: 10 is on the wrong side of warn 100"},
		{"wrong type", "rules:\n  - metric: queue_depth\n    warn: lots\n", `line 3: rules[0].warn: "lots" is not a number`},
		{"duration in words", "rules:\n  - metric: drift_units\n    crit: 1\n    for: 3 seconds\n", `line 4: rules[0].for: "3 seconds" is not a duration: write it like 90s, 10m or 1h30m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAlerts([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if c, err := ParseAlerts(nil); err != nil || len(c.Rules) != 0 {
		t.Fatalf("empty file: %v %+v", err, c)
	}
}

func TestEvaluate(t *testing.T) {
	c := AlertConfig{Rules: []Rule{
		{Metric: "latency_p99_ms", Warn: 100, Crit: 500},
		{Metric: "seconds_to_sold_out", Warn: 60, Crit: 10, Below: true},
		{Metric: "consumer_lag", Warn: 10},
	}}
	s := &Snapshot{
		Traffic:  Reading[Traffic]{Status: Status{State: OK}},
		Pipeline: Reading[Pipeline]{Status: Status{State: Down}, Data: Pipeline{Lag: 99}},
		Derived:  Derived{LatencyP99MS: 250, LatencyCount: 10, Items: []ItemDerived{{SecondsToSoldOut: 5}, {SecondsToSoldOut: -1}}},
	}
	got := Evaluate(c, s)
	want := []Alert{
		{Metric: "seconds_to_sold_out", Level: Crit, Value: 5, Threshold: 10, Below: true},
		{Metric: "latency_p99_ms", Level: Warn, Value: 250, Threshold: 100},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v (a down source's metric must not fire)", got, want)
	}
	if got[0].String() != "crit seconds_to_sold_out 5 ≤ 10" {
		t.Fatalf("alert line %q", got[0])
	}
}

func TestAlerterWaitsForARuleToHold(t *testing.T) {
	a := NewAlerter(AlertConfig{Rules: []Rule{{Metric: "consumer_lag", Warn: 10, Crit: 100, For: 2 * time.Second}}})
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	snap := func(sec int, lag int64) *Snapshot {
		return &Snapshot{At: t0.Add(time.Duration(sec) * time.Second), Pipeline: Reading[Pipeline]{Status: Status{State: OK}, Data: Pipeline{Lag: lag}}}
	}
	var got []string
	for _, step := range []struct {
		sec int
		lag int64
	}{{0, 500}, {1, 500}, {2, 500}, {3, 50}, {4, 0}, {5, 500}} {
		s := snap(step.sec, step.lag)
		al := a.Evaluate(s)
		line := "-"
		if len(al) > 0 {
			line = al[0].Level
		}
		got = append(got, line)
		if n := len(Evaluate(a.cfg, s)); (step.lag >= 10) != (n == 1) {
			t.Errorf("the stateless Evaluate must report the condition as it stands (lag %d: %d alerts)", step.lag, n)
		}
	}
	// crit needs 2s of lag ≥ 100; at 3s the lag drops to warn level, which has held since 0s.
	want := []string{"-", "-", "crit", "warn", "-", "-"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// FuzzParseAlerts: no alerts file makes the parser panic, and what it accepts evaluates against a
// snapshot without panicking either.
func FuzzParseAlerts(f *testing.F) {
	if b, err := os.ReadFile("../examples/warroom-alerts.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("rules:\n  - metric: drift_units\n    crit: 1\n    for: 3s\n"))
	f.Add([]byte("rules: [{metric: p99}]"))
	f.Add([]byte("rules:\n  - metric: seconds_to_sold_out\n    warn: 60\n    crit: 10\n    below: true\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseAlerts(b)
		if err != nil {
			return
		}
		Evaluate(cfg, &Snapshot{})
	})
}
