package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Order statuses as stored in orders.status.
const (
	StatusPending   = "PENDING"
	StatusPaid      = "PAID"
	StatusExpired   = "EXPIRED"
	StatusCancelled = "CANCELLED"
	StatusFailed    = "FAILED"
)

// Order is one stored order.
type Order struct {
	ID     uuid.UUID
	SaleID string
	ItemID string
	UserID string
	Slot   int
	Shard  int // the stock shard that holds the order's unit, where a release must go
	Shards int // the item's shard count, which with Shard names the shard's keys
	Status string
	// PayingSince is set while a payment is under way (the payment claim); an order with a claim
	// is never expired, so a charge and an expiry cannot both win.
	PayingSince *time.Time
	PaymentRef  string // the payment provider's reference, once PAID
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UpdatedAt   time.Time
}

// orderColumns is the select list scanOrder reads, shared so every query returns whole orders.
const orderColumns = `id, sale_id, item_id, user_id, slot, shard, status, paying_since, payment_ref,
	created_at, expires_at, updated_at,
	(SELECT si.shards FROM sale_items si WHERE si.sale_id = orders.sale_id AND si.id = orders.item_id)`

// scanOrder reads one row of orderColumns, followed by any extra destinations.
func scanOrder(row pgx.Row, extra ...any) (Order, error) {
	var o Order
	var slot, shard int16
	var ref *string
	var shards *int32 // NULL only for an order whose item is gone (the foreign key forbids it)
	dest := append([]any{&o.ID, &o.SaleID, &o.ItemID, &o.UserID, &slot, &shard, &o.Status, &o.PayingSince, &ref,
		&o.CreatedAt, &o.ExpiresAt, &o.UpdatedAt, &shards}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Order{}, err
	}
	o.Slot, o.Shard, o.Shards = int(slot), int(shard), 1
	if shards != nil {
		o.Shards = int(*shards)
	}
	if ref != nil {
		o.PaymentRef = *ref
	}
	return o, nil
}

// collectOrders reads every row of orderColumns.
func collectOrders(rows pgx.Rows) ([]Order, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Order, error) { return scanOrder(row) })
}

// GetOrder reads one order. A missing order is an *outcome.Error with code outcome.NotFound.
func (s *Store) GetOrder(ctx context.Context, id uuid.UUID) (Order, error) {
	o, err := scanOrder(s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, outcome.Errorf(outcome.NotFound, "order %s not found", id)
	}
	if err != nil {
		return Order{}, fmt.Errorf("get order %s: %w", id, err)
	}
	return o, nil
}

// ItemCounts is one item's stock and its orders by status, as PostgreSQL sees them.
type ItemCounts struct {
	ItemID    string
	Quantity  int64
	Sold      int64
	Pending   int64
	Paid      int64
	Expired   int64
	Cancelled int64
	Failed    int64
}

// Queryer is what a read needs from a pool or a transaction.
type Queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Snapshot runs read in one read-only REPEATABLE READ transaction, so every query read makes
// sees the same committed state: an order that closes meanwhile is in all of them or in none.
func (s *Store) Snapshot(ctx context.Context, read func(q Queryer) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("begin a snapshot read: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := read(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Counts returns every item of the sale with its order counts, ordered by item id; a sale with no
// items (or no such sale) gives an empty slice.
func (s *Store) Counts(ctx context.Context, saleID string) ([]ItemCounts, error) {
	return CountsIn(ctx, s.pool, saleID)
}

// CountsIn is Counts read through q, such as a Snapshot's transaction.
func CountsIn(ctx context.Context, q Queryer, saleID string) ([]ItemCounts, error) {
	rows, err := q.Query(ctx, `
		SELECT i.id, i.quantity, i.sold,
			count(*) FILTER (WHERE o.status = 'PENDING'),
			count(*) FILTER (WHERE o.status = 'PAID'),
			count(*) FILTER (WHERE o.status = 'EXPIRED'),
			count(*) FILTER (WHERE o.status = 'CANCELLED'),
			count(*) FILTER (WHERE o.status = 'FAILED')
		FROM sale_items i
		LEFT JOIN orders o ON o.sale_id = i.sale_id AND o.item_id = i.id
		WHERE i.sale_id = $1
		GROUP BY i.id, i.quantity, i.sold
		ORDER BY i.id`, saleID)
	if err != nil {
		return nil, fmt.Errorf("count orders of sale %s: %w", saleID, err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ItemCounts])
	if err != nil {
		return nil, fmt.Errorf("count orders of sale %s: %w", saleID, err)
	}
	return counts, nil
}
