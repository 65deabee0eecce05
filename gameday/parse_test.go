package gameday

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

func TestDefaultScenarioIsTheExample(t *testing.T) {
	example, err := os.ReadFile("../examples/gameday.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(example, DefaultYAML()) {
		t.Error("examples/gameday.yaml differs from gameday/default.yaml; copy one over the other")
	}
	sc := Default()
	if sc.Buyers != 2000 || sc.Units() != 200 || len(sc.Steps) != 5 || sc.Seed != 42 {
		t.Errorf("default scenario: %s", sc)
	}
	want := []string{"server-crash-after-reserve", "payment", "redis-restart-empty", "server-add", "kafka-kill"}
	for i, st := range sc.Steps {
		if st.Fault.Name() != want[i] {
			t.Errorf("step %d: %s, want %s", i, st.Fault.Name(), want[i])
		}
	}
}

func TestParseFull(t *testing.T) {
	sc, err := Parse([]byte(`
name: full
seed: 9
sale:
  id: s1
  holdTTL: 5s
  perUserLimit: 2
  room: {admissionRate: 40/s, powDifficulty: 4}
  items:
    - {id: a, quantity: 10, shards: 2}
    - {id: b, quantity: 5}
servers: 3
buyers: 1_000
rate: 50/s
ramp: 1s
pay: 0.6
cancel: 0.1
retries: 2
retryAfter: 2s
settle: 30s
steps:
  - {at: 1s, jitter: 500ms, fault: kafka-kill, down: 2s}
  - {at: 2s, fault: postgres-stop, for: 4s}
  - {at: 3s, fault: payment, declineRate: 0.3, latency: 800ms}
  - {at: 4s, fault: payment, outage: true, for: 1s}
  - {at: 5s, fault: server-kill}
  - {at: 6s, fault: server-crash-after-reserve, after: 4}
  - {at: 7s, fault: server-add}
  - {at: 8s, fault: room-state-lost}
  - {at: 9s, fault: redis-restart-empty}
  - {at: 10s, fault: toxic, service: redis, toxic: latency, stream: both, toxicity: 0.5, attributes: {latency: 150, jitter: 50}, for: 4s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "full" || sc.Seed != 9 || sc.Servers != 3 || sc.Buyers != 1000 || sc.Rate != 50 || sc.Ramp != time.Second ||
		sc.Pay != 0.6 || sc.Cancel != 0.1 || sc.Retries != 2 || sc.RetryAfter != 2*time.Second || sc.Settle != 30*time.Second {
		t.Errorf("scenario %+v", sc)
	}
	if sc.Sale.ID != "s1" || sc.Sale.HoldTTL != 5*time.Second || sc.Sale.PerUserLimit != 2 || len(sc.Sale.Items) != 2 || sc.Sale.Items[0].Shards != 2 || sc.Units() != 15 {
		t.Errorf("sale %+v", sc.Sale)
	}
	if r := sc.Sale.Room; r == nil || r.AdmissionRate != 40 || r.PowDifficulty != 4 {
		t.Errorf("room %+v", sc.Sale.Room)
	}
	if len(sc.Steps) != 10 {
		t.Fatalf("%d steps", len(sc.Steps))
	}
	if f := sc.Steps[0]; f.Line != 22 || f.Jitter != 500*time.Millisecond || f.Fault != (kafkaKill{Down: 2 * time.Second}) {
		t.Errorf("step 0 %+v", f)
	}
	if f := sc.Steps[2].Fault.(paymentFault); f.DeclineRate != 0.3 || f.Latency != 800*time.Millisecond || f.ErrorRate != -1 || f.Outage {
		t.Errorf("payment step %+v", f)
	}
	if f := sc.Steps[5].Fault.(crashAfterReserve); f.After != 4 {
		t.Errorf("crash step %+v", f)
	}
	if f := sc.Steps[9].Fault.(netFault); f.Service != "redis" || f.For != 4*time.Second || f.Toxic == nil ||
		f.Toxic.String() != "latency jitter=50 latency=150 both on 50% of connections" {
		t.Errorf("toxic step %+v: %v", f, f.Toxic)
	}
}

// A malformed scenario names the line and the problem.
func TestParseErrorsNameTheLine(t *testing.T) {
	const base = "name: x\nsale:\n  items:\n    - {id: a, quantity: 10}\nbuyers: 10\nrate: 5/s\n"
	tests := []struct {
		name, doc string
		line      int
		want      string
	}{
		{"unknown key", base + "colour: red\n", 7, `colour: unknown key (known: name, seed, sale,`},
		{"near miss", base + "stepz: []\n", 7, `stepz: unknown key (did you mean steps? known: name, seed,`},
		{"nested near miss", strings.Replace(base, "quantity: 10", "quantty: 10", 1), 4, `sale.items[0].quantty: unknown key (did you mean quantity? known: id, quantity, shards)`},
		{"fault near miss", base + "steps:\n  - at: 1s\n    fault: kafka-kil\n", 9, `unknown fault "kafka-kil" (did you mean kafka-kill?`},
		{"unknown fault", base + "steps:\n  - at: 1s\n    fault: meteor\n", 9, `unknown fault "meteor"`},
		{"missing at", base + "steps:\n  - fault: server-add\n", 8, `missing "at"`},
		{"bad duration", base + "steps:\n  - at: soon\n    fault: server-add\n", 8, `steps[0].at: "soon" is not a duration: write it like 90s, 10m or 1h30m`},
		{"duration in words", base + "settle: 10 minutes\n", 7, `settle: "10 minutes" is not a duration`},
		{"negative retry-after", base + "retryAfter: -1s\n", 7, `retryAfter: -1s: must not be negative`},
		{"param of another fault", base + "steps:\n  - at: 1s\n    fault: server-add\n    down: 2s\n", 10, `steps[0].down: unknown key (known: at, jitter, fault)`},
		{"bad share", base + "pay: 1.5\n", 7, `pay: "1.5" is not a share`},
		{"pay and cancel over 1", base + "pay: 0.7\ncancel: 0.5\n", 7, "more than 1"},
		{"bad rate", strings.Replace(base, "5/s", "fast", 1), 6, `rate: "fast" is not a rate: write it like 250/s`},
		{"zero rate", strings.Replace(base, "5/s", "0/s", 1), 6, `rate: 0/s: want more than 0`},
		{"zero quantity", strings.Replace(base, "quantity: 10", "quantity: 0", 1), 4, "sale.items[0].quantity: want 1..10000000, not 0"},
		{"buyers in words", strings.Replace(base, "buyers: 10", "buyers: many", 1), 5, `buyers: "many" is not a whole number`},
		{"payment without a change", base + "steps:\n  - at: 1s\n    fault: payment\n", 8, "say what changes"},
		{"outage not a bool", base + "steps:\n  - {at: 1s, fault: payment, outage: maybe}\n", 8, `steps[0].outage: "maybe" is not true or false`},
		{"missing sale", "buyers: 10\nrate: 5/s\n", 1, `missing "sale"`},
		{"hold too short", strings.Replace(base, "sale:\n", "sale:\n  holdTTL: 10ms\n", 1), 3, "holdTTL 10ms: at least 1s"},
		{"duplicate key", base + "buyers: 20\n", 7, `buyers: given twice (first at line 5)`},
		{"syntax", base + "steps: [\n", 7, "did not find expected node content"},
		{"steps not a list", base + "steps: kafka-kill\n", 7, "want a list"},
		{"freeze without a service", base + "steps:\n  - {at: 1s, fault: freeze, for: 1s}\n", 8, "say which service"},
		{"freeze of postgres", base + "steps:\n  - {at: 1s, fault: freeze, service: postgres}\n", 8, `service "postgres": want redis or kafka`},
		{"toxic without a kind", base + "steps:\n  - {at: 1s, fault: toxic, service: redis}\n", 8, "toxic: say which (bandwidth, latency, limit_data, reset_peer, slicer, timeout)"},
		{"unknown toxic", base + "steps:\n  - {at: 1s, fault: toxic, service: redis, toxic: lag}\n", 8, `toxic "lag": want one of bandwidth, latency`},
		{"toxic attribute of another", base + "steps:\n  - {at: 1s, fault: toxic, service: redis, toxic: latency, attributes: {rate: 5}}\n", 8, `toxic latency: no attribute "rate" (it has jitter, latency)`},
		{"toxic attribute in words", base + "steps:\n  - {at: 1s, fault: toxic, service: redis, toxic: latency, attributes: {latency: slow}}\n", 8, `steps[0].attributes.latency: "slow" is not a whole number`},
		{"toxic stream", base + "steps:\n  - {at: 1s, fault: toxic, service: redis, toxic: latency, stream: sideways}\n", 8, `stream "sideways": want downstream, upstream or both`},
		{"toxic on kafka", base + "steps:\n  - {at: 1s, fault: toxic, service: kafka, toxic: latency}\n", 8, `service "kafka": want redis or postgres`},
		{"too many replays", base + "replays: 9\n", 7, "replays"},
		{"room without a rate", strings.Replace(base, "sale:\n", "sale:\n  room: {maxActive: 5}\n", 1), 3, "want admissionRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			var le *yamlfield.Error
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *yamlfield.Error", err)
			}
			if le.Line != tt.line || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q (line %d), want line %d containing %q", err, le.Line, tt.line, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("message %q does not start with its line", err)
			}
		})
	}
}

func TestLoadFileNamesTheFile(t *testing.T) {
	path := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(path, []byte("name: x\nbuyers: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 2: buyers: \"many\" is not a whole number") {
		t.Errorf("err = %v", err)
	}
}

func TestParseBudget(t *testing.T) {
	base := "name: b\nsale: {id: s, items: [{id: i, quantity: 1}]}\nbuyers: 1\nrate: 1\n"
	s, err := Parse([]byte(base + "budget: {undecided: 0.05, outage: 2s}\n"))
	if err != nil || s.Budget == nil || s.Budget.Undecided != 0.05 || s.Budget.Outage != 2*time.Second {
		t.Fatalf("budget: %+v %v", s.Budget, err)
	}
	if s, err := Parse([]byte(base + "budget: {outage: 2s}\n")); err != nil || s.Budget.Undecided >= 0 {
		t.Fatalf("an outage budget alone judges no share: %+v %v", s.Budget, err)
	}
	for _, bad := range []string{"budget: {}\n", "budget: {undecided: 2}\n", "budget: {nope: 1}\n"} {
		if _, err := Parse([]byte(base + bad)); err == nil {
			t.Errorf("%q: want an error naming the line", bad)
		}
	}
}

// TestShippedDrillScenariosParse: the drill scenarios in examples/ are drills (no sale, only steps
// on the team's own system), each with the steps it says.
func TestShippedDrillScenariosParse(t *testing.T) {
	for file, kinds := range map[string]string{
		"../examples/drill-faults.yaml": "toxic toxic exec exec http",
		"../examples/drill-lie.yaml":    "toxic",
	} {
		sc, err := LoadDrillFile(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var got []string
		for _, st := range sc.Steps {
			got = append(got, st.Fault.Name())
		}
		if strings.Join(got, " ") != kinds || len(sc.Proxies()) == 0 {
			t.Errorf("%s: steps %v, proxies %v; want %s", file, got, sc.Proxies(), kinds)
		}
		if _, err := LoadFile(file); err == nil {
			t.Errorf("%s: a drill scenario read as a local game day's (it has no sale)", file)
		}
	}
}
