package gameday

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/steps"
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
