package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// dueWhere selects the orders the expiry job owns: PENDING, unclaimed (a claimed order is being
// paid and is resolved by the payment or the claim resolver, never by expiry), past expires_at.
const dueWhere = `status = 'PENDING' AND paying_since IS NULL AND expires_at <= now()`

// ExpireDue expires up to limit due orders, oldest first, and returns every order it expired so
// the caller can return each unit to Redis (to the order's shard). Each item is handled in its own
// transaction: the item row is locked first, the due orders are taken FOR UPDATE SKIP LOCKED and
// re-checked under their row locks, and sold goes down by exactly the number expired. Several
// server instances may run it at once: an order is returned by one call only. On an error it still
// returns the orders expired (and committed) before it, which the caller must release too. Fewer
// than limit orders does not mean none are left: rows being claimed or expired concurrently are
// skipped.
func (s *Store) ExpireDue(ctx context.Context, limit int) ([]Order, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("expire due orders: limit %d must be positive", limit)
	}
	type itemDue struct {
		saleID, itemID string
		n              int
	}
	// The oldest limit due orders, grouped by item: bounded however large the backlog is, and it
	// walks the (status, expires_at) index.
	rows, err := s.pool.Query(ctx, `
		SELECT sale_id, item_id, count(*) FROM (
			SELECT sale_id, item_id, expires_at FROM orders WHERE `+dueWhere+` ORDER BY expires_at LIMIT $1
		) due GROUP BY sale_id, item_id ORDER BY min(expires_at)`, limit)
	if err != nil {
		return nil, fmt.Errorf("find due orders: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (itemDue, error) {
		var d itemDue
		err := row.Scan(&d.saleID, &d.itemID, &d.n)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("find due orders: %w", err)
	}
	var expired []Order
	for _, it := range items {
		got, err := s.expireItem(ctx, it.saleID, it.itemID, it.n)
		expired = append(expired, got...)
		if err != nil {
			return expired, fmt.Errorf("expire orders of item %s/%s: %w", it.saleID, it.itemID, err)
		}
	}
	return expired, nil
}

// expireItem expires up to n due orders of one item in one transaction.
func (s *Store) expireItem(ctx context.Context, saleID, itemID string, n int) ([]Order, error) {
	var expired []Order
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sale_items WHERE sale_id = $1 AND id = $2 FOR UPDATE`, saleID, itemID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // an item is only removed without orders: nothing of it can be due
		}
		if err != nil {
			return fmt.Errorf("lock item: %w", err)
		}
		// MATERIALIZED runs the locking select exactly once; the outer WHERE repeats the due test
		// so only rows still due under our locks change (a claim or payment that committed first
		// wins).
		rows, err := tx.Query(ctx, `
			WITH due AS MATERIALIZED (
				SELECT id FROM orders WHERE sale_id = $1 AND item_id = $2 AND `+dueWhere+`
				ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED
			)
			UPDATE orders SET status = 'EXPIRED', updated_at = now()
			WHERE id IN (SELECT id FROM due) AND `+dueWhere+`
			RETURNING `+orderColumns, saleID, itemID, n)
		if err != nil {
			return fmt.Errorf("expire: %w", err)
		}
		if expired, err = collectOrders(rows); err != nil {
			return fmt.Errorf("expire: %w", err)
		}
		if len(expired) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE sale_items SET sold = sold - $3 WHERE sale_id = $1 AND id = $2`,
			saleID, itemID, len(expired)); err != nil {
			return fmt.Errorf("return %d units: %w", len(expired), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return expired, nil
}

// StuckClaims lists up to limit PENDING orders whose payment claim is older than olderThan, oldest
// first: a server died mid-payment, and until someone asks the payment provider and records the
// answer (MarkPaid, FailPayment or ReleaseClaim) the order can neither expire nor be paid again.
func (s *Store) StuckClaims(ctx context.Context, olderThan time.Duration, limit int) ([]Order, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+orderColumns+` FROM orders
		WHERE paying_since < now() - $1::bigint * interval '1 microsecond' AND status = 'PENDING'
		ORDER BY paying_since LIMIT $2`, olderThan.Microseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("find stuck payment claims: %w", err)
	}
	stuck, err := collectOrders(rows)
	if err != nil {
		return nil, fmt.Errorf("find stuck payment claims: %w", err)
	}
	return stuck, nil
}

// ReleaseClaim drops the payment claim of a PENDING order whose payment certainly did not happen,
// so the buyer may pay again and the order is once more subject to expiry (at once, if it is past
// expires_at). It reports whether there was a claim to drop. It changes no liveness, so it takes
// no item lock.
func (s *Store) ReleaseClaim(ctx context.Context, id uuid.UUID) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE orders SET paying_since = NULL, updated_at = now()
		WHERE id = $1 AND status = 'PENDING' AND paying_since IS NOT NULL`, id)
	if err != nil {
		return false, fmt.Errorf("release payment claim of order %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Statuses returns the status of each of ids that exists in PostgreSQL; an id absent from the map
// has no order (yet). The orphaned-hold sweeper uses it to tell a hold whose order was never
// recorded from one that is merely waiting for the consumer.
func (s *Store) Statuses(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, status FROM orders WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("order statuses: %w", err)
	}
	var id uuid.UUID
	var status string
	if _, err := pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		out[id] = status
		return nil
	}); err != nil {
		return nil, fmt.Errorf("order statuses: %w", err)
	}
	return out, nil
}

// SaleIDs returns, ordered by id, the sales the background jobs still watch: those without an end
// and those that ended less than a day ago, long enough for the last holds to expire and be swept.
func (s *Store) SaleIDs(ctx context.Context) ([]string, error) {
	return s.saleIDs(ctx, "")
}

// RoomSaleIDs is SaleIDs narrowed to the sales whose waiting room is on, for the admission rounds
// every instance runs.
func (s *Store) RoomSaleIDs(ctx context.Context) ([]string, error) {
	return s.saleIDs(ctx, ` AND (room->>'enabled')::boolean IS TRUE`)
}

func (s *Store) saleIDs(ctx context.Context, and string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM sales WHERE (closes_at IS NULL OR closes_at > now() - interval '1 day')`+and+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	return ids, nil
}
