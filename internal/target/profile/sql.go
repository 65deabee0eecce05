package profile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// QueryError is a profile query that failed on the live target: it names the query and carries
// the database's own error.
type QueryError struct {
	// Query is the query's field, e.g. sql.live.
	Query string
	Err   error
}

func (e *QueryError) Error() string { return fmt.Sprintf("query %s: %v", e.Query, e.Err) }

func (e *QueryError) Unwrap() error { return e.Err }

// ErrNoItem is an item the item query returns no row for.
var ErrNoItem = errors.New("no such item")

// ItemRow is what the item query returns.
type ItemRow struct {
	Quantity, Sold int64
}

// Order is one row of the userOrders query.
type Order struct {
	ID, Status string
}

// DB runs a profile's queries on the target's PostgreSQL.
type DB struct {
	p    *Profile
	pool *pgxpool.Pool
}

// NewDB runs p's queries on pool.
func NewDB(p *Profile, pool *pgxpool.Pool) *DB { return &DB{p: p, pool: pool} }

func args(sale, item, user string) pgx.NamedArgs {
	return pgx.NamedArgs{"sale": sale, "item": item, "user": user}
}

// rows runs one query and returns its column names and rows, its errors named after it.
func (d *DB) rows(ctx context.Context, field, q string, a pgx.NamedArgs) ([]string, [][]any, error) {
	rows, err := d.pool.Query(ctx, q, a)
	if err != nil {
		return nil, nil, &QueryError{Query: field, Err: err}
	}
	defer rows.Close()
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, nil, &QueryError{Query: field, Err: err}
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, &QueryError{Query: field, Err: err}
	}
	return cols, out, nil
}

// scalar runs a query that returns one number.
func (d *DB) scalar(ctx context.Context, field, q string, a pgx.NamedArgs) (int64, error) {
	_, rows, err := d.rows(ctx, field, q, a)
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) < 1 {
		return 0, &QueryError{Query: field, Err: fmt.Errorf("returned %d rows: want one row with one number", len(rows))}
	}
	n, err := toInt(rows[0][0])
	if err != nil {
		return 0, &QueryError{Query: field, Err: err}
	}
	return n, nil
}

// Items returns the sale's item ids.
func (d *DB) Items(ctx context.Context, sale string) ([]string, error) {
	_, rows, err := d.rows(ctx, "sql.items", d.p.SQL.Items, args(sale, "", ""))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, fmt.Sprint(r[0]))
	}
	return ids, nil
}

// Item returns an item's quantity and sold counter; ErrNoItem when the query returns no row.
func (d *DB) Item(ctx context.Context, sale, item string) (ItemRow, error) {
	cols, rows, err := d.rows(ctx, "sql.item", d.p.SQL.Item, args(sale, item, ""))
	if err != nil {
		return ItemRow{}, err
	}
	q, s := slices.Index(cols, "quantity"), slices.Index(cols, "sold")
	switch {
	case q < 0 || s < 0:
		return ItemRow{}, &QueryError{Query: "sql.item", Err: fmt.Errorf("returns columns %v: want quantity and sold", cols)}
	case len(rows) == 0:
		return ItemRow{}, fmt.Errorf("item %s: %w (sql.item returned no row)", item, ErrNoItem)
	}
	var row ItemRow
	if row.Quantity, err = toInt(rows[0][q]); err == nil {
		row.Sold, err = toInt(rows[0][s])
	}
	if err != nil {
		return ItemRow{}, &QueryError{Query: "sql.item", Err: err}
	}
	return row, nil
}

// Shards returns an item's number of stock shards: 1 unless the profile shards items.
func (d *DB) Shards(ctx context.Context, sale, item string) (int, error) {
	if !d.p.Sharded() {
		return 1, nil
	}
	n, err := d.scalar(ctx, "sql.shards", d.p.SQL.Shards, args(sale, item, ""))
	return max(int(n), 1), err
}

// PerUserLimit returns the sale's per-user limit: the query's, or limits.perUser.
func (d *DB) PerUserLimit(ctx context.Context, sale string) (int, error) {
	if d.p.SQL.PerUserLimit == "" {
		return d.p.PerUser(), nil
	}
	n, err := d.scalar(ctx, "sql.perUserLimit", d.p.SQL.PerUserLimit, args(sale, "", ""))
	return int(n), err
}

// Live returns how many live orders an item has.
func (d *DB) Live(ctx context.Context, sale, item string) (int64, error) {
	return d.scalar(ctx, "sql.live", d.p.SQL.Live, args(sale, item, ""))
}

// Paid returns how many paid orders an item has; ok is false when the profile has no such query.
func (d *DB) Paid(ctx context.Context, sale, item string) (n int64, ok bool, err error) {
	if d.p.SQL.Paid == "" {
		return 0, false, nil
	}
	n, err = d.scalar(ctx, "sql.paid", d.p.SQL.Paid, args(sale, item, ""))
	return n, err == nil, err
}

// UserOrders returns a user's orders of an item.
func (d *DB) UserOrders(ctx context.Context, sale, item, user string) ([]Order, error) {
	cols, rows, err := d.rows(ctx, "sql.userOrders", d.p.SQL.UserOrders, args(sale, item, user))
	if err != nil {
		return nil, err
	}
	id, st := slices.Index(cols, "id"), slices.Index(cols, "status")
	if id < 0 || st < 0 {
		return nil, &QueryError{Query: "sql.userOrders", Err: fmt.Errorf("returns columns %v: want id and status", cols)}
	}
	out := make([]Order, 0, len(rows))
	for _, r := range rows {
		out = append(out, Order{ID: fmt.Sprint(r[id]), Status: fmt.Sprint(r[st])})
	}
	return out, nil
}

// ItemOrders returns every order of an item by its user; ok is false when the profile has no
// such query (then UserOrders reads them buyer by buyer).
func (d *DB) ItemOrders(ctx context.Context, sale, item string) (map[string][]Order, bool, error) {
	if d.p.SQL.ItemOrders == "" {
		return nil, false, nil
	}
	cols, rows, err := d.rows(ctx, "sql.itemOrders", d.p.SQL.ItemOrders, args(sale, item, ""))
	if err != nil {
		return nil, false, err
	}
	user, id, st := slices.Index(cols, "user_id"), slices.Index(cols, "id"), slices.Index(cols, "status")
	if user < 0 || id < 0 || st < 0 {
		return nil, false, &QueryError{Query: "sql.itemOrders", Err: fmt.Errorf("returns columns %v: want user_id, id and status", cols)}
	}
	out := map[string][]Order{}
	for _, r := range rows {
		u := fmt.Sprint(r[user])
		out[u] = append(out[u], Order{ID: fmt.Sprint(r[id]), Status: fmt.Sprint(r[st])})
	}
	return out, true, nil
}

// LiveBuyers returns the users with live orders of an item and how many each; ok is false when
// the profile has no such query.
func (d *DB) LiveBuyers(ctx context.Context, sale, item string) (map[string]int64, bool, error) {
	if d.p.SQL.LiveBuyers == "" {
		return nil, false, nil
	}
	_, rows, err := d.rows(ctx, "sql.liveBuyers", d.p.SQL.LiveBuyers, args(sale, item, ""))
	if err != nil {
		return nil, false, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		n := int64(1)
		if len(r) > 1 {
			if n, err = toInt(r[1]); err != nil {
				return nil, false, &QueryError{Query: "sql.liveBuyers", Err: err}
			}
		}
		out[fmt.Sprint(r[0])] += n
	}
	return out, true, nil
}

// FixSold runs fix.sold for an item and returns how many rows it changed.
func (d *DB) FixSold(ctx context.Context, sale, item string) (int64, error) {
	tag, err := d.pool.Exec(ctx, d.p.Fix.Sold, args(sale, item, ""))
	if err != nil {
		return 0, &QueryError{Query: "fix.sold", Err: err}
	}
	return tag.RowsAffected(), nil
}

// IsLive reports whether an order status is live (pending or paid) for the target.
func (p *Profile) IsLive(status string) bool { return slices.Contains(p.SQL.LiveStatuses, status) }

// toInt reads a number a query returned, whatever integer type the column has.
func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int:
		return int64(n), nil
	case string:
		return strconv.ParseInt(n, 10, 64)
	case nil:
		return 0, errors.New("returned NULL: want a number")
	}
	if i, ok := v.(interface{ Int64Value() (pgtype.Int8, error) }); ok { // numeric, as sum() returns
		if n, err := i.Int64Value(); err == nil && n.Valid {
			return n.Int64, nil
		}
	}
	if s, ok := v.(fmt.Stringer); ok {
		if i, err := strconv.ParseInt(s.String(), 10, 64); err == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("returned %v (%T): want an integer", v, v)
}
