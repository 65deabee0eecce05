package demo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/reconcile"
)

// TestRender pins what fsctl demo prints: the outcomes in name order, the settled state, and the
// invariants, OK or each one broken.
func TestRender(t *testing.T) {
	ok := demo.Report{
		Outcomes: map[outcome.Code]int{outcome.SoldOut: 1990, outcome.Reserved: 10, outcome.RateLimited: 3},
		Quantity: 10, Holds: 10, Counts: orders.ItemCounts{Pending: 10, Sold: 10},
		Settled: 1234567 * time.Microsecond, Reconcile: reconcile.Report{SaleID: "black-friday"},
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
invariants: OK (no oversell, every RESERVED is an order in PostgreSQL, no unit lost)
reconcile:  OK (Redis, PostgreSQL and Kafka agree order by order; fsctl reconcile --sale black-friday)
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	broken := ok
	broken.Problems = []string{"oversold: 11 buyers told RESERVED for 10 units", "units lost: x"}
	out.Reset()
	if err := broken.Render(&out); err != nil {
		t.Fatal(err)
	}
	tail := "redis:    stock = 0, live holds = 10\n" +
		"invariant BROKEN: oversold: 11 buyers told RESERVED for 10 units\n" +
		"invariant BROKEN: units lost: x\n"
	if !strings.HasSuffix(out.String(), tail) || strings.Contains(out.String(), ": OK") {
		t.Errorf("broken invariants:\n%s", out.String())
	}
}
