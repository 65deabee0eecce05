package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// Render prints the report for people: the buyers per outcome, what PostgreSQL and Redis hold
// once the orders settled, every invariant, reconcile's word, and the verdict.
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
	if rc := r.Reconcile; rc != nil && len(rc.Items) > 0 {
		it := rc.Items[0]
		settled := ""
		for _, s := range r.Steps {
			if s.Name == "settle" {
				settled = fmt.Sprintf(" (settled %s after the burst)", s.Took.Round(time.Millisecond))
			}
		}
		fmt.Fprintf(w, "postgres: %d pending orders, sold = %d of %d%s\n", it.Counts.Pending, it.Counts.Sold, it.Quantity, settled)
		fmt.Fprintf(w, "redis:    stock = %d, live holds = %d\n", it.Stock, it.Holds)
	}
	if err := finding.Invariants(w, r.Verdicts); err != nil {
		return err
	}
	if rc := r.Reconcile; rc != nil {
		word := "OK (Redis, PostgreSQL and Kafka agree order by order)"
		if !rc.OK() {
			word = "VIOLATIONS"
		}
		fmt.Fprintf(w, "reconcile: %s; fsctl reconcile --sale %s\n", word, rc.SaleID)
	}
	return r.Result.Render(w, "DEMO", ": no oversell, every RESERVED is an order in PostgreSQL, no unit lost")
}
