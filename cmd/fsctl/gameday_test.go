package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/gameday"
	"github.com/fsctl/fsctl/internal/contract/finding"
)

// The CLI's own decisions, no services needed: the built-in scenario is printable, a malformed
// scenario is exit status 2 naming the file and line, and bad flags are refused before anything starts.
func TestGamedayCLI(t *testing.T) {
	out, code, err := runCLI(t, "gameday", "--print-default")
	if err != nil || code != 0 || out != string(gameday.DefaultYAML()) {
		t.Errorf("--print-default: code %d, err %v, %d bytes", code, err, len(out))
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	doc := "name: x\nsale:\n  items:\n    - {id: a, quantity: 10}\nbuyers: 10\nrate: 5/s\nsteps:\n  - at: 1s\n    fault: meteor\n"
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, code, err = runCLI(t, "gameday", "-f", bad)
	if code != 2 || err == nil || !strings.Contains(err.Error(), bad+": line 9: unknown fault \"meteor\"") {
		t.Errorf("malformed scenario: code %d, err %v", code, err)
	}
	for _, args := range [][]string{{"--teardown", "sometimes"}, {"--output", "yaml"},
		{"--chaos", "-f", bad}, {"--duration", "5s"}, {"--chaos-steps", "1"}, {"--chaos", "--duration", "2h"},
		{"--chaos", "--chaos-steps", "0"}, {"--chaos", "--faults", "3", "--chaos-steps", "4"},
		{"--budget-undecided", "1.5"}, {"--budget-undecided", "-0.1"}, {"--budget-outage", "0s"}} {
		if _, code, err := runCLI(t, append([]string{"gameday"}, args...)...); code != 2 || err == nil {
			t.Errorf("%v: code %d, err %v", args, code, err)
		}
	}
}

// --budget-undecided and --budget-outage give only the part of the budget they name (the other
// negative: not given, so the scenario keeps its own; gameday.TestWithBudget), and neither gives
// nothing.
func TestGamedayBudgetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want gameday.Budget
	}{
		{nil, gameday.Budget{Undecided: -1, Outage: -1}},
		{[]string{"--budget-outage", "5s"}, gameday.Budget{Undecided: -1, Outage: 5 * time.Second}},
		{[]string{"--budget-undecided", "0.05"}, gameday.Budget{Undecided: 0.05, Outage: -1}},
		{[]string{"--budget-undecided", "0", "--budget-outage", "3s"}, gameday.Budget{Undecided: 0, Outage: 3 * time.Second}},
	} {
		cmd := newGamedayCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o := &gamedayOptions{}
		o.budgetUndecided, _ = cmd.Flags().GetFloat64("budget-undecided")
		o.budgetOutage, _ = cmd.Flags().GetDuration("budget-outage")
		got, err := o.budget(cmd.Flags())
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%v: budget %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

// A game day or a drill that ran ends with nil when it passed, else with its own error or one
// naming it, and the exit status of its verdict.
func TestGamedayReportError(t *testing.T) {
	ok := []finding.Finding{{Check: "no oversell", Status: finding.Pass}}
	broken := []finding.Finding{{Check: "no oversell", Status: finding.Fail}}
	for _, tc := range []struct {
		rep    gameday.Report
		runErr error
		code   int
		says   string
	}{
		{gameday.Report{Kind: "game day", Scenario: "s", Passed: true, Invariants: ok}, nil, 0, ""},
		{gameday.Report{Kind: "game day", Scenario: "s", Invariants: broken}, nil, exitInvariant, "game day s failed"},
		{gameday.Report{Kind: "drill", Scenario: "d", Invariants: ok}, nil, exitCheck, "drill d failed"},
		{gameday.Report{Kind: "drill", Scenario: "d", Error: "boom"}, errors.New("boom"), exitFailed, "boom"},
		// passed, but its report files could not be written (gameday.Play's error)
		{gameday.Report{Kind: "game day", Scenario: "s", Passed: true, Invariants: ok}, errors.New("report.md: disk full"), exitFailed, "report.md: disk full"},
	} {
		err := reportError(&tc.rep, tc.runErr)
		if tc.says == "" {
			if err != nil {
				t.Errorf("%s %s passed: %v", tc.rep.Kind, tc.rep.Scenario, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.says || exitCode(err, true) != tc.code {
			t.Errorf("%s %s: %v (exit %d), want %q exit %d", tc.rep.Kind, tc.rep.Scenario, err, exitCode(err, true), tc.says, tc.code)
		}
	}
}
