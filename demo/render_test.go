package demo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/reconcile"
)

// TestRender pins what fsctl demo prints: the outcomes in name order, the settled state, every
// invariant, reconcile's word and the verdict, or each thing broken.
func TestRender(t *testing.T) {
	ok := demo.Report{
		Outcomes: map[outcome.Code]int{outcome.SoldOut: 1990, outcome.Reserved: 10, outcome.RateLimited: 3},
		Steps:    []steps.Step{{Name: "settle", Took: 1234567 * time.Microsecond, OK: true}},
		Result: pipeline.Result{
			Verdicts: []finding.Finding{finding.Verdict("no oversell (responses)", nil), finding.Verdict("every RESERVED order reached PostgreSQL", nil)},
			Reconcile: &reconcile.Report{SaleID: "black-friday", Items: []reconcile.ItemReport{{ItemID: "console", Quantity: 10, Holds: 10,
				Counts: orders.ItemCounts{Pending: 10, Sold: 10}}}},
			Settled: true, Passed: true,
		},
	}
	var out strings.Builder
	if err := ok.Render(&out); err != nil {
		t.Fatal(err)
	}
	want := `┌──────────────┬────────┐
│   OUTCOME    │ BUYERS │
├──────────────┼────────┤
│ RATE_LIMITED │ 3      │
│ RESERVED     │ 10     │
│ SOLD_OUT     │ 1990   │
└──────────────┴────────┘
postgres: 10 pending orders, sold = 10 of 10 (settled 1.235s after the burst)
redis:    stock = 0, live holds = 10
invariant OK      no oversell (responses)
invariant OK      every RESERVED order reached PostgreSQL
reconcile: OK (Redis, PostgreSQL and Kafka agree order by order); fsctl reconcile --sale black-friday
DEMO PASSED: no oversell, every RESERVED is an order in PostgreSQL, no unit lost
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	broken := ok
	broken.Verdicts = []finding.Finding{finding.Verdict("no oversell (responses)", []string{"console: 11 reservations for 10 units"})}
	broken.Passed, broken.Failures = false, []string{"no oversell (responses): console: 11 reservations for 10 units"}
	out.Reset()
	if err := broken.Render(&out); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"invariant BROKEN  no oversell (responses)", "DEMO FAILED: 1 broken\n  - no oversell (responses): console: 11 reservations"} {
		if !strings.Contains(out.String(), line) || strings.Contains(out.String(), "PASSED") {
			t.Errorf("broken invariants: want %q in\n%s", line, out.String())
		}
	}
}
