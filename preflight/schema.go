package preflight

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/finding"
)

// checkSchema: the migrations are at this binary's latest version and the constraints that are
// the last safety net against oversell are in place.
func checkSchema(ctx context.Context, e *env) []finding.Finding {
	if e.db == nil {
		return needs("schema", "PostgreSQL")
	}
	var out []finding.Finding
	st, err := orders.MigrationStatus(ctx, e.cfg.PostgresURL)
	switch {
	case err != nil:
		out = append(out, finding.Finding{Group: "schema", Check: "migrations", Status: finding.Fail, Detail: err.Error()})
	case st.Current < st.Latest:
		out = append(out, finding.Finding{Group: "schema", Check: "migrations", Status: finding.Fail,
			Detail: fmt.Sprintf("database at version %d, this fsctl carries %d", st.Current, st.Latest),
			Fix:    "fsctl migrate (the servers apply it at start unless --migrate=false)"})
	case st.Current > st.Latest:
		out = append(out, finding.Finding{Group: "schema", Check: "migrations", Status: finding.Warn,
			Detail: fmt.Sprintf("database at version %d is newer than this fsctl (%d)", st.Current, st.Latest),
			Fix:    "use the fsctl release the servers run"})
	default:
		out = append(out, finding.Finding{Group: "schema", Check: "migrations", Status: finding.Pass,
			Detail: fmt.Sprintf("at version %d (latest)", st.Current)})
	}
	return append(out, checkConstraints(ctx, e))
}

// The safety net docs/design.md requires, as PostgreSQL prints it back.
var (
	wantChecks = []string{"(sold <= quantity)", "(sold >= 0)"}
	wantUnique = []string{"(sale_id, item_id, user_id, slot)", "'PENDING'", "'PAID'"}
)

func checkConstraints(ctx context.Context, e *env) finding.Finding {
	r := finding.Finding{Group: "schema", Check: "constraints", Fix: "fsctl migrate; if the database is at the latest version, " +
		"someone dropped it: restore it from migrations/00001_sales.sql and 00002_orders.sql"}
	defs, err := queryStrings(ctx, e, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = 'sale_items'::regclass AND contype = 'c'`)
	var unique []string
	if err == nil {
		unique, err = queryStrings(ctx, e, `SELECT pg_get_indexdef(indexrelid) FROM pg_index
			WHERE indrelid = 'orders'::regclass AND indisunique AND indpred IS NOT NULL`)
	}
	if err != nil {
		r.Status, r.Detail = finding.Fail, fmt.Sprintf("read constraints: %v", err)
		return r
	}
	var missing []string
	for _, w := range wantChecks {
		if !anyContains(defs, w) {
			missing = append(missing, "CHECK "+w+" on sale_items")
		}
	}
	if !anyContainsAll(unique, wantUnique) {
		missing = append(missing, "partial UNIQUE index on orders (sale_id, item_id, user_id, slot) over live statuses")
	}
	if len(missing) > 0 {
		r.Status, r.Detail = finding.Fail, "missing: "+strings.Join(missing, "; ")
		return r
	}
	r.Status, r.Detail, r.Fix = finding.Pass, "CHECK (sold <= quantity), CHECK (sold >= 0), one live order per user slot", ""
	return r
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func anyContainsAll(list, subs []string) bool {
	for _, s := range list {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			return true
		}
	}
	return false
}

func queryStrings(ctx context.Context, e *env, sql string) ([]string, error) {
	rows, err := e.db.Pool().Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
