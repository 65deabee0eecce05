package gameday

import (
	"strings"
	"testing"
	"time"
)

// Several seeds sum up to the totals a long run is published with: faults by kind, acknowledged
// orders and the missing ones, and the median and the worst undecided share and outage, each
// worst naming its seed; a failing seed prints its replay command.
func TestSeedsSumUp(t *testing.T) {
	runs := SeedsReport{
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

// The seeds' verdict is the worst failing seed's, and the error names every failing seed; a run
// where every seed passed has neither.
func TestSeedsVerdict(t *testing.T) {
	runs := SeedsReport{{Seed: 7, Passed: true}, {Seed: 8, verdict: VerdictMissed}, {Seed: 9, verdict: VerdictBroken}, {Seed: 10, verdict: VerdictFailed}}
	if v := runs.Verdict(); v != VerdictBroken {
		t.Errorf("Verdict() = %d, want VerdictBroken", v)
	}
	if err := runs.Err(); err == nil || err.Error() != "3 of 4 chaos seed(s) failed: 8, 9, 10" {
		t.Errorf("Err() = %v", err)
	}
	passed := runs[:1]
	if v, err := passed.Verdict(), passed.Err(); v != VerdictPassed || err != nil {
		t.Errorf("all passed: Verdict() = %d, Err() = %v", v, err)
	}
}

// The budget flags replace only the part of the scenario's budget they give, and give a scenario
// without one (a chaos run's) a budget; with none given the scenario keeps its own, or none.
func TestWithBudget(t *testing.T) {
	none := Budget{Undecided: -1, Outage: -1}
	for _, tc := range []struct {
		over   Budget
		budget *Budget
		want   *Budget
	}{
		{none, &Budget{Undecided: 0.15, Outage: 10 * time.Second}, &Budget{Undecided: 0.15, Outage: 10 * time.Second}},
		{Budget{Undecided: -1, Outage: 5 * time.Second}, &Budget{Undecided: 0.15, Outage: 10 * time.Second}, &Budget{Undecided: 0.15, Outage: 5 * time.Second}},
		{Budget{Undecided: 0.05, Outage: -1}, &Budget{Undecided: 0.15, Outage: 10 * time.Second}, &Budget{Undecided: 0.05, Outage: 10 * time.Second}},
		{Budget{Undecided: -1, Outage: 3 * time.Second}, nil, &Budget{Undecided: -1, Outage: 3 * time.Second}},
		{none, nil, nil},
	} {
		sc := Scenario{Budget: tc.budget}.WithBudget(tc.over)
		if (sc.Budget == nil) != (tc.want == nil) || sc.Budget != nil && *sc.Budget != *tc.want {
			t.Errorf("%+v on %+v: budget %+v, want %+v", tc.over, tc.budget, sc.Budget, tc.want)
		}
	}
}

// The one teardown rule: always stops the stack, auto only when the run started some of it,
// never never.
func TestTeardownStops(t *testing.T) {
	for _, tc := range []struct {
		td      Teardown
		started bool
		want    bool
	}{
		{TeardownAlways, false, true}, {TeardownAlways, true, true},
		{TeardownAuto, false, false}, {TeardownAuto, true, true},
		{TeardownNever, false, false}, {TeardownNever, true, false},
	} {
		if got := tc.td.stops(tc.started); got != tc.want {
			t.Errorf("%s, started %v: stops %v, want %v", tc.td, tc.started, got, tc.want)
		}
	}
}
