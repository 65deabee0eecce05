package reconcile

import (
	"fmt"
	"io"
	"strconv"

	"github.com/fsctl/fsctl/internal/platform/table"
)

// Render prints one row per item, then every finding with what --fix does about it, the order
// log, what was repaired, and a verdict.
func (r Report) Render(w io.Writer) error {
	through := ""
	if r.Profile != "" {
		through = " through profile " + r.Profile
	}
	if r.OrderByOrder {
		through += " (order by order)"
	}
	fmt.Fprintf(w, "reconcile of sale %s%s at %s\n", r.SaleID, through, r.At.Format("2006-01-02T15:04:05Z"))
	// On a narrow terminal the columns the others sum up go first (package table).
	t := table.New(w, "item", "quantity", "redis stock", "redis holds", "pending", "paid", "closed", "sold", "in flight", "findings").
		Drop("closed", "in flight", "pending", "paid", "redis holds")
	for _, it := range r.Items {
		c := it.Counts
		closed := c.Expired + c.Cancelled + c.Failed
		if err := t.Append(it.ItemID, i64(it.Quantity), i64(it.Stock), i64(it.Holds), i64(c.Pending), i64(c.Paid),
			i64(closed), i64(c.Sold), strconv.Itoa(it.InFlight), strconv.Itoa(len(it.Findings))); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := r.renderFindings(w); err != nil {
		return err
	}
	if k := r.Kafka; k != nil {
		dead := fmt.Sprintf("dead letters: %d of this sale (%d in all)", k.DeadLetters, k.DeadLettersTotal)
		if k.DeadLetterTopic == "" {
			dead = "no dead-letter topic declared"
		}
		fmt.Fprintf(w, "kafka: group %s %s, %d member(s), lag %d; %s\n", k.Group.Group, k.Group.State, k.Group.Members, k.Group.Lag, dead)
		if k.Error != "" {
			fmt.Fprintf(w, "kafka: %s\n", k.Error)
		}
	}
	if len(r.Actions) > 0 {
		fmt.Fprintln(w, "changes made:")
	}
	for _, a := range r.Actions {
		item := ""
		if a.ItemID != "" {
			item = a.ItemID + ": "
		}
		if a.Error != "" {
			fmt.Fprintf(w, "  FAILED %s%s: %s (because %s)\n", item, a.What, a.Error, a.Why)
		} else {
			fmt.Fprintf(w, "  %s%s (because %s)\n", item, a.What, a.Why)
		}
	}
	verdict := "OK: Redis, PostgreSQL and Kafka agree"
	if !r.OK() {
		verdict = "VIOLATIONS: see the findings"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

func (r Report) renderFindings(w io.Writer) error {
	n := 0
	for _, it := range r.Items {
		n += len(it.Findings)
	}
	if n == 0 {
		return nil
	}
	// The detail and the fix wrap; on a narrow terminal what --fix does goes (its own line under
	// "changes made" says it when it is done).
	t := table.New(w, "item", "finding", "buyer and order", "detail", "what fix does").
		Wrap("detail", 54).Wrap("what fix does", 38).Drop("what fix does")
	for _, it := range r.Items {
		for _, f := range it.Findings {
			who := f.Order
			if f.User != "" {
				who = f.User + " " + who
			}
			if err := t.Append(it.ItemID, f.Check, who, f.Detail, f.Fix); err != nil {
				return err
			}
		}
	}
	return t.Render()
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }
