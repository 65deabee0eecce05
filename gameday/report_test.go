package gameday

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/durations"
	"github.com/fsctl/fsctl/pipeline/steps"
)

// Failures names each thing that did not hold once: the run's error is its failed phase's, so it
// is listed with the phase's name only; a report with any failure, or without invariants, fails.
func TestReportFailures(t *testing.T) {
	r := &Report{
		Error:  "step(s) failed: line 4 server-add",
		Phases: []steps.Step{{Name: "sale"}, {Name: "blast", Error: "step(s) failed: line 4 server-add"}},
		Steps:  []StepResult{{Line: 4, Fault: "server-add", Error: "server-4 did not get ready"}, {Line: 5, Fault: "freeze"}},
		Invariants: []finding.Finding{{Check: "no oversell", Status: finding.Pass},
			{Check: "no internal errors (500)", Status: finding.Fail, Detail: "buyer 3: 500"}},
	}
	want := []string{"blast: step(s) failed: line 4 server-add", "step 4 server-add: server-4 did not get ready", "no internal errors (500): buyer 3: 500"}
	if got := r.Failures(); !slices.Equal(got, want) {
		t.Errorf("Failures() = %q, want %q", got, want)
	}
	if r.allOK() {
		t.Error("allOK with failures")
	}
	r.Error = "teardown: stack down: boom"
	if got := r.Failures(); len(got) != 4 || got[0] != r.Error {
		t.Errorf("an error of no phase: Failures() = %q, want it first", got)
	}
	ok := &Report{Invariants: []finding.Finding{{Check: "no oversell", Status: finding.Pass}}}
	if len(ok.Failures()) != 0 || !ok.allOK() {
		t.Errorf("a clean report: Failures() = %q, allOK %v", ok.Failures(), ok.allOK())
	}
	if (&Report{}).allOK() {
		t.Error("a report without invariants passed")
	}
}

// WriteFiles leaves the report in a folder three ways, the JSON one readable back.
func TestReportWriteFiles(t *testing.T) {
	dir := t.TempDir()
	r := &Report{Kind: "game day", Scenario: "files", Seed: 3, Invariants: []finding.Finding{{Check: "no oversell", Status: finding.Pass}}}
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "report.html"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !strings.Contains(string(b), "files") {
			t.Errorf("%s: %v, %d bytes without the scenario's name", name, err, len(b))
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Scenario != "files" || back.Seed != 3 {
		t.Errorf("report.json: %v, %+v", err, back)
	}
}

// A report's JSON writes every duration as milliseconds named <name>Ms and, for one release, the
// deprecated nanoseconds under the old names, the two consistent; a report written before the
// <name>Ms fields still reads.
func TestReportJSONHasTookMsAndTheDeprecatedTook(t *testing.T) {
	r := &Report{Kind: "game day", Scenario: "ms", Took: 67*time.Second + 512*time.Millisecond + 3*time.Microsecond, ReleasedAt: 4100 * time.Millisecond,
		Phases:       []steps.Step{{Name: "blast", Took: 25100 * time.Millisecond, OK: true}},
		Steps:        []StepResult{{Line: 27, Fault: "payment", Planned: 2 * time.Second, Started: 15200 * time.Millisecond, Took: 3 * time.Second}},
		Timeline:     []Event{{At: 15250 * time.Millisecond, Source: "gameday", What: "step <27> & more"}},
		Availability: Availability{Buyers: 10, Outage: 2700 * time.Millisecond, OutageFrom: 4100 * time.Millisecond},
		Soak:         &Soak{Every: 30 * time.Second, Samples: []SoakSample{{At: 90 * time.Second, Instances: 2}}},
		Invariants:   []finding.Finding{{Check: "no oversell", Status: finding.Pass}}}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"step <27> & more"`) {
		t.Errorf("report.json escapes HTML:\n%s", b.String())
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	first := func(v any) map[string]any { a, _ := v.([]any); return obj(a[0]) }
	for _, c := range []struct {
		where string
		m     map[string]any
		names []string
		want  []time.Duration
	}{
		{"report", doc, []string{"took", "releasedAt"}, []time.Duration{r.Took, r.ReleasedAt}},
		{"phases[0]", first(doc["phases"]), []string{"took"}, []time.Duration{25100 * time.Millisecond}},
		{"steps[0]", first(doc["steps"]), []string{"planned", "started", "took"}, []time.Duration{2 * time.Second, 15200 * time.Millisecond, 3 * time.Second}},
		{"timeline[0]", first(doc["timeline"]), []string{"at"}, []time.Duration{15250 * time.Millisecond}},
		{"availability", obj(doc["availability"]), []string{"outage", "outageFrom"}, []time.Duration{2700 * time.Millisecond, 4100 * time.Millisecond}},
		{"soak", obj(doc["soak"]), []string{"every"}, []time.Duration{30 * time.Second}},
		{"soak.samples[0]", first(obj(doc["soak"])["samples"]), []string{"at"}, []time.Duration{90 * time.Second}},
	} {
		for i, name := range c.names {
			ms, okMs := c.m[name+"Ms"].(float64)
			ns, okNs := c.m[name].(float64)
			if !okMs || !okNs || ms != durations.Ms(c.want[i]) || ns != float64(c.want[i]) || math.Abs(ns/1e6-ms) > 0.001 {
				t.Errorf("%s: %sMs %v and the deprecated %s %v, want %v ms and %d ns", c.where, name, c.m[name+"Ms"], name, c.m[name], durations.Ms(c.want[i]), c.want[i])
			}
		}
	}
	if got := doc["tookMs"]; got != 67512.003 {
		t.Errorf("tookMs %v, want 67512.003", got)
	}

	var back Report
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back.Took != r.Took || back.ReleasedAt != r.ReleasedAt ||
		back.Steps[0] != r.Steps[0] || back.Timeline[0] != r.Timeline[0] || back.Availability.Outage != r.Availability.Outage ||
		back.Soak.Every != r.Soak.Every || back.Soak.Samples[0].At != r.Soak.Samples[0].At || back.Phases[0] != r.Phases[0] {
		t.Errorf("read back: %v, %+v", err, back)
	}

	// A report written before the <name>Ms fields: nanoseconds under the old names only.
	old := `{"kind":"game day","scenario":"old","took":67500000000,"releasedAt":4100000000,
		"phases":[{"name":"blast","took":25100000000,"ok":true}],
		"steps":[{"line":27,"fault":"payment","kind":"payment","describe":"","planned":2000000000,"started":15200000000,"took":3000000000}],
		"availability":{"buyers":10,"undecided":0,"answers":null,"outage":2700000000,"outageFrom":4100000000},
		"timeline":[{"at":15250000000,"source":"gameday","what":"x"}],
		"soak":{"every":30000000000,"samples":[{"at":90000000000,"instances":2}],"verdicts":null},"passed":true}`
	var was Report
	if err := json.Unmarshal([]byte(old), &was); err != nil || was.Scenario != "old" || was.Took != 67500*time.Millisecond || was.ReleasedAt != 4100*time.Millisecond ||
		was.Phases[0].Took != 25100*time.Millisecond || was.Steps[0].Started != 15200*time.Millisecond || was.Steps[0].Took != 3*time.Second ||
		was.Availability.Outage != 2700*time.Millisecond || was.Availability.OutageFrom != 4100*time.Millisecond ||
		was.Timeline[0].At != 15250*time.Millisecond || was.Soak.Every != 30*time.Second || was.Soak.Samples[0].At != 90*time.Second || !was.Passed {
		t.Errorf("an old report: %v, %+v", err, was)
	}
}

// The seeds' JSON has outageMs and tookMs and the deprecated outage and took.
func TestSeedsJSONHasMsAndTheDeprecatedNames(t *testing.T) {
	var b strings.Builder
	if err := (SeedsReport{{Seed: 3, Outage: 2500 * time.Millisecond, Took: time.Minute}}).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var runs []map[string]any
	if err := json.Unmarshal([]byte(b.String()), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("%s: %v", b.String(), err)
	}
	if r := runs[0]; r["outageMs"] != 2500.0 || r["outage"] != 2.5e9 || r["tookMs"] != 60000.0 || r["took"] != 6e10 {
		t.Errorf("seed run: %v", r)
	}
	var back SeedsReport
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back[0].Outage != 2500*time.Millisecond || back[0].Took != time.Minute {
		t.Errorf("read back: %v, %+v", err, back)
	}
}
