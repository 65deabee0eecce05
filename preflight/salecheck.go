package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Hold TTLs outside this range are legal but rarely what a flash sale wants.
const (
	shortHold = time.Minute
	longHold  = 30 * time.Minute
)

// checkSale: the sale exists, is valid, opens in the future (or is open), and its limits make
// sense against the servers' payment timeout; with --file, it is the sale the file defines.
func checkSale(_ context.Context, e *env) []finding.Finding {
	if e.db == nil {
		return needs("sale", "PostgreSQL")
	}
	b := e.bundled
	if b.sale == nil {
		r := finding.Finding{Group: "sale", Check: "sale exists", Status: finding.Fail, Detail: b.saleErr.Error()}
		if outcome.CodeOf(b.saleErr) == outcome.NotFound {
			r.Fix = "fsctl sale create -f SALE.yaml"
		}
		return []finding.Finding{r}
	}
	sl := *b.sale
	out := []finding.Finding{definition(sl), schedule(sl, e.cfg.Now()), limits(sl, e.cfg.PaymentTimeout)}
	if e.file != nil {
		out = append(out, matchesFile(sl, *e.file, e.cfg.SaleFile))
	}
	return out
}

func definition(sl sale.Sale) finding.Finding {
	r := finding.Finding{Group: "sale", Check: "sale definition"}
	if err := sl.Validate(); err != nil {
		r.Status, r.Detail, r.Fix = finding.Fail, err.Error(), "fix the sale file and run fsctl sale create -f SALE.yaml"
		return r
	}
	var units int64
	var empty []string
	for _, it := range sl.Items {
		units += it.Quantity
		if it.Quantity == 0 {
			empty = append(empty, it.ID)
		}
	}
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("%d items, %d units", len(sl.Items), units)
	if len(empty) > 0 {
		r.Status = finding.Warn
		r.Detail += "; quantity 0: " + strings.Join(empty, ", ")
		r.Fix = "give the items a quantity, or remove them from the sale"
	}
	return r
}

func schedule(sl sale.Sale, now time.Time) finding.Finding {
	r := finding.Finding{Group: "sale", Check: "schedule"}
	switch {
	case sl.Ended(now):
		r.Status, r.Detail = finding.Fail, "closed at "+stamp(sl.ClosesAt)
		r.Fix = "move closesAt (and opensAt) into the future and run fsctl sale create -f SALE.yaml"
	case sl.OpenAt(now):
		r.Status, r.Detail = finding.Pass, fmt.Sprintf("open since %s (%s ago)", stamp(sl.OpensAt), span(now.Sub(sl.OpensAt)))
	default:
		r.Status, r.Detail = finding.Pass, fmt.Sprintf("opens %s (in %s)", stamp(sl.OpensAt), span(sl.OpensAt.Sub(now)))
	}
	if r.Status == finding.Pass && !sl.ClosesAt.IsZero() {
		r.Detail += ", closes " + stamp(sl.ClosesAt)
	}
	return r
}

func limits(sl sale.Sale, paymentTimeout time.Duration) finding.Finding {
	r := finding.Finding{Group: "sale", Check: "limits", Status: finding.Pass,
		Detail: fmt.Sprintf("%d per user, hold %s, payment timeout %s", sl.PerUserLimit, sl.HoldTTL, paymentTimeout)}
	switch {
	case paymentTimeout >= sl.HoldTTL:
		r.Status = finding.Fail
		r.Detail += ": a payment may still be running when its hold expires"
		r.Fix = "raise holdTTL well above the servers' --payment-timeout (or lower the timeout)"
	case sl.HoldTTL < shortHold:
		r.Status = finding.Warn
		r.Detail += fmt.Sprintf(": under %s, buyers may not finish paying", shortHold)
		r.Fix = "raise holdTTL unless this is a rehearsal"
	case sl.HoldTTL > longHold:
		r.Status = finding.Warn
		r.Detail += fmt.Sprintf(": over %s, abandoned holds keep units off sale for long", longHold)
		r.Fix = "lower holdTTL"
	}
	return r
}

// matchesFile compares what decides who gets a unit; names and prices are left to the shop.
func matchesFile(stored, file sale.Sale, path string) finding.Finding {
	r := finding.Finding{Group: "sale", Check: "matches " + path}
	var diff []string
	cmp := func(field string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			diff = append(diff, fmt.Sprintf("%s: stored %v, file %v", field, a, b))
		}
	}
	if stored.ID != file.ID {
		diff = append(diff, fmt.Sprintf("id: checking sale %s, the file defines %s", stored.ID, file.ID))
	}
	cmp("opensAt", stamp(stored.OpensAt), stamp(file.OpensAt))
	cmp("closesAt", stamp(stored.ClosesAt), stamp(file.ClosesAt))
	cmp("perUserLimit", stored.PerUserLimit, file.PerUserLimit)
	cmp("holdTTL", stored.HoldTTL, file.HoldTTL)
	cmp("room", stored.Room, file.Room)
	cmp("items", itemIDs(stored), itemIDs(file))
	for _, it := range file.Items {
		if st, ok := stored.Item(it.ID); ok {
			cmp("items."+it.ID+".quantity", st.Quantity, it.Quantity)
			cmp("items."+it.ID+".shards", st.ShardCount(), it.ShardCount())
		}
	}
	if len(diff) > 0 {
		r.Status, r.Detail, r.Fix = finding.Fail, strings.Join(diff, "; "), "fsctl sale create -f "+path
		return r
	}
	r.Status, r.Detail = finding.Pass, "the stored sale is the file's"
	return r
}

// span prints a stretch of time the way an operator reads a schedule: days beyond two of them.
func span(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return d.Round(time.Second).String()
}

func itemIDs(sl sale.Sale) []string {
	ids := sl.ItemIDs()
	slices.Sort(ids)
	return ids
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
