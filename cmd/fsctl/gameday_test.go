package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/gameday"
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

// --budget-undecided and --budget-outage replace only the part of the scenario's budget they name,
// and give a scenario without one (a chaos run's) a budget.
func TestGamedayBudgetFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		budget *gameday.Budget
		want   *gameday.Budget
	}{
		{nil, &gameday.Budget{Undecided: 0.15, Outage: 10 * time.Second}, &gameday.Budget{Undecided: 0.15, Outage: 10 * time.Second}},
		{[]string{"--budget-outage", "5s"}, &gameday.Budget{Undecided: 0.15, Outage: 10 * time.Second}, &gameday.Budget{Undecided: 0.15, Outage: 5 * time.Second}},
		{[]string{"--budget-undecided", "0.05"}, &gameday.Budget{Undecided: 0.15, Outage: 10 * time.Second}, &gameday.Budget{Undecided: 0.05, Outage: 10 * time.Second}},
		{[]string{"--budget-outage", "3s"}, nil, &gameday.Budget{Undecided: -1, Outage: 3 * time.Second}},
		{nil, nil, nil},
	} {
		cmd := newGamedayCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o := &gamedayOptions{}
		o.budgetUndecided, _ = cmd.Flags().GetFloat64("budget-undecided")
		o.budgetOutage, _ = cmd.Flags().GetDuration("budget-outage")
		sc := gameday.Scenario{Budget: tc.budget}
		if err := o.applyBudget(cmd.Flags(), &sc); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if (sc.Budget == nil) != (tc.want == nil) || sc.Budget != nil && *sc.Budget != *tc.want {
			t.Errorf("%v on %+v: budget %+v, want %+v", tc.args, tc.budget, sc.Budget, tc.want)
		}
	}
}

// Several seeds sum up to the totals a long run is published with: faults by kind, acknowledged
// orders and the missing ones, and the median and the worst undecided share and outage, each
// worst naming its seed; a failing seed prints its replay command.
func TestChaosSeedsSumUp(t *testing.T) {
	runs := chaosRuns{
		{Seed: 1, Passed: true, Faults: map[string]int{"kafka-kill": 2, "redis-freeze": 1}, Acknowledged: 100, share: 0.02, Outage: time.Second},
		{Seed: 2, Passed: true, Faults: map[string]int{"kafka-kill": 1}, Acknowledged: 50, share: 0.40, Outage: 900 * time.Millisecond},
		{Seed: 3, Passed: false, Faults: map[string]int{"postgres-stop": 3}, Acknowledged: 10, Missing: 1, share: 0.01, Outage: 7 * time.Second,
			Failed: []string{"acknowledged orders in PostgreSQL: 1 missing"}, Replay: "fsctl gameday --chaos --seed 3", Report: "r.md"},
		{Seed: 4, Passed: true, Faults: map[string]int{}, share: -1},
	}
	var b strings.Builder
	if err := runs.Render(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"3 of 4 seed(s) passed; 160 acknowledged orders checked, 1 missing from PostgreSQL",
		"faults injected: kafka-kill 3, postgres-stop 3, redis-freeze 1",
		"undecided: median 2.0%, worst 40.0% (seed 2); longest outage: median 1s, worst 7s (seed 3)",
		"seed 3 FAILED (r.md):", "replay: fsctl gameday --chaos --seed 3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
