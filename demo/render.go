package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"
)

// Render prints the report for people: the buyers per outcome, what PostgreSQL and Redis hold
// once the orders settled, and the invariants: OK, or each one broken.
func (r Report) Render(w io.Writer) error {
	t := tablewriter.NewWriter(w)
	t.Header("outcome", "buyers")
	for _, c := range slices.Sorted(maps.Keys(r.Outcomes)) {
		if err := t.Append(string(c), strconv.Itoa(r.Outcomes[c])); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "postgres: %d pending orders, sold = %d of %d (settled %s after the burst)\n",
		r.Counts.Pending, r.Counts.Sold, r.Quantity, r.Settled.Round(time.Millisecond))
	fmt.Fprintf(w, "redis:    stock = %d, live holds = %d\n", r.Stock, r.Holds)
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "invariants: OK (no oversell, every RESERVED is an order in PostgreSQL, no unit lost)")
		fmt.Fprintln(w, "reconcile:  OK (Redis, PostgreSQL and Kafka agree order by order; fsctl reconcile --sale "+r.Reconcile.SaleID+")")
		return nil
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "invariant BROKEN:", p)
	}
	return nil
}
