package profile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// Items judges what sql.items returned for the sale (listed, or why it failed; a caller lists
// once for every check that reads the items) and returns the items the other pieces read: given,
// else those listed.
func (f Fit) Items(listed []string, err error, given []string) ([]string, finding.Finding) {
	if err != nil {
		fix := "is --sale right? else " + f.fix("sql.items")
		if qe, ok := errors.AsType[*QueryError](err); ok {
			fix = f.fix(qe.Query)
		}
		return given, found("sql.items", finding.Fail, err.Error(), fix)
	}
	detail := fmt.Sprintf("%d item(s): %s", len(listed), clip(listed, 5))
	if len(given) == 0 {
		return listed, found("sql.items", finding.Pass, detail, "")
	}
	return given, found("sql.items", finding.Pass, detail+"; checking "+strings.Join(given, ", "), "")
}

// Queries reads the per-user limit, then runs every per-item query of each item (ProbeItem judges
// their values together), and returns each item's shard count for the key piece.
func (f Fit) Queries(ctx context.Context, db *DB, items []string) ([]finding.Finding, []int) {
	limit, lf := f.limit(ctx, db)
	out, shards := []finding.Finding{lf}, make([]int, len(items))
	for i, item := range items {
		var fs []finding.Finding
		shards[i], fs = f.item(ctx, db, item, limit)
		out = append(out, fs...)
	}
	return out, shards
}

// limit reads the per-user limit the live-buyers query is judged against: a sale lets each buyer
// hold at least one unit, or nobody could buy.
func (f Fit) limit(ctx context.Context, db *DB) (int, finding.Finding) {
	field := "sql.perUserLimit"
	if f.P.SQL.PerUserLimit == "" {
		field = "limits.perUser"
	}
	n, err := db.PerUserLimit(ctx, f.Sale)
	switch {
	case err != nil:
		return 1, found(field, finding.Fail, err.Error(), f.fix(field))
	case n < 1:
		return 1, found(field, finding.Fail, fmt.Sprintf("%s returned %d: want at least 1", field, n), f.fix(field))
	}
	return n, found(field, finding.Pass, fmt.Sprintf("per-user limit %d", n), "")
}

// item runs every per-item query of one item, one line per declared query, and returns the
// item's shard count.
func (f Fit) item(ctx context.Context, db *DB, item string, limit int) (int, []finding.Finding) {
	ip := db.ProbeItem(ctx, f.Sale, item, probeUser, limit)
	fields := []struct {
		field, detail string
		declared      bool
	}{
		{"sql.item", fmt.Sprintf("quantity %d, sold %d", ip.Quantity, ip.Sold), true},
		{"sql.shards", fmt.Sprintf("%d shard(s)", ip.Shards), f.P.Sharded()},
		{"sql.live", fmt.Sprintf("%d live orders", ip.Live), true},
		{"sql.paid", fmt.Sprintf("%d paid orders", ip.Paid), f.P.SQL.Paid != ""},
		{"sql.userOrders", fmt.Sprintf("%d orders of %s, columns id and status", ip.ProbeOrders, probeUser), true},
		{"sql.liveBuyers", fmt.Sprintf("%d live buyers", len(ip.Buyers)), f.P.SQL.LiveBuyers != ""},
		{"sql.itemOrders", fmt.Sprintf("%d orders of %d buyers, columns user_id, id and status", ip.ItemOrders, ip.ItemBuyers), f.P.SQL.ItemOrders != ""},
	}
	var out []finding.Finding
	for _, l := range fields {
		pr, bad := ip.Problem(l.field)
		switch {
		case !l.declared:
		case !bad:
			out = append(out, found(l.field, finding.Pass, "item "+item+": "+l.detail, ""))
		default:
			out = append(out, f.problem(item, pr))
		}
	}
	return max(ip.Shards, 1), out
}

// problem words one query's problem: the item (unless its error names it), what went wrong, and
// what to do about it.
func (f Fit) problem(item string, pr Problem) finding.Finding {
	r := found(pr.Field, finding.Fail, "item "+item+": "+pr.Err.Error(), f.fix(pr.Field))
	switch {
	case pr.NoItem():
		r.Detail, r.Fix = pr.Err.Error(), "is the item id right? else "+r.Fix
	case pr.Warn:
		r.Status, r.Fix = finding.Warn, "run again; if they still differ, "+r.Fix+" (or sql.live)"
	case !pr.Query && (pr.Field == "sql.item" || pr.Field == "sql.live"):
		r.Fix = "either " + r.Fix + ", or the item oversold: fsctl reconcile"
	}
	return r
}

func clip(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more", len(s)-n)
}
