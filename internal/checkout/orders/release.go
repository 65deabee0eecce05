package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// FailPayment records a payment that certainly did not happen (declined, or the provider
// unavailable): a claimed PENDING order becomes FAILED, its claim is cleared and its unit goes back
// to the item (sold - 1), in one transaction that locks the item row first. The bool reports
// whether this call changed it; an unclaimed or no longer PENDING order comes back unchanged with
// false (a payment that was never claimed must not close the order). A missing order is an
// *outcome.Error with code outcome.NotFound.
func (s *Store) FailPayment(ctx context.Context, id uuid.UUID) (Order, bool, error) {
	o, _, changed, err := s.release(ctx, id, "", StatusFailed, `status = 'PENDING' AND paying_since IS NOT NULL`)
	if err != nil {
		return Order{}, false, fmt.Errorf("fail payment of order %s: %w", id, err)
	}
	return o, changed, nil
}

// Cancel lets a buyer give an unpaid order back: an unclaimed PENDING order before its expires_at
// becomes CANCELLED and its unit goes back to the item (sold - 1), in one transaction that locks
// the item row first. Cancelling a CANCELLED order again answers (order, false, nil), so a retried
// DELETE is harmless. Otherwise the error is an *outcome.Error (returned with the order):
// outcome.PaymentInProgress while a payment is claimed, outcome.OrderClosed for a PAID or FAILED
// order, outcome.Expired for an EXPIRED order or a PENDING one past expires_at (the expiry job owns
// that one, so the unit is released exactly once), and outcome.NotFound for a missing order or
// another user's.
func (s *Store) Cancel(ctx context.Context, id uuid.UUID, userID string) (Order, bool, error) {
	o, due, changed, err := s.release(ctx, id, userID, StatusCancelled,
		`status = 'PENDING' AND paying_since IS NULL AND expires_at > now()`)
	if err != nil {
		return Order{}, false, fmt.Errorf("cancel order %s: %w", id, err)
	}
	if changed || o.Status == StatusCancelled {
		return o, changed, nil
	}
	switch claimOf(o, due) {
	case ClaimBusy:
		return o, false, outcome.Errorf(outcome.PaymentInProgress, "a payment of order %s is in progress", id)
	case ClaimPaid:
		return o, false, outcome.Errorf(outcome.OrderClosed, "order %s is paid", id)
	case ClaimExpired:
		return o, false, outcome.Errorf(outcome.Expired, "order %s has expired", id)
	default:
		return o, false, outcome.Errorf(outcome.OrderClosed, "the payment of order %s failed", id)
	}
}

// release moves one live order to the closed status to, where cond (a WHERE clause on the order's
// row) allows it, and gives its unit back, in one transaction: the item row is locked before the
// order row, the lock order of every liveness change. userID, when set, must own the order. When
// cond does not hold, it returns the order as it stands under the item lock, with whether it is
// past expires_at, and changes nothing.
func (s *Store) release(ctx context.Context, id uuid.UUID, userID, to, cond string) (o Order, due, changed bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Order{}, false, false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	// The sale and item of an order never change, so this unlocked read finds the item to lock.
	o, _, err = readOrder(ctx, tx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && userID != "" && o.UserID != userID) {
		return Order{}, false, false, notFound(id)
	}
	if err != nil {
		return Order{}, false, false, fmt.Errorf("read: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sale_items WHERE sale_id = $1 AND id = $2 FOR UPDATE`,
		o.SaleID, o.ItemID); err != nil {
		return Order{}, false, false, fmt.Errorf("lock item %s/%s: %w", o.SaleID, o.ItemID, err)
	}
	o, err = scanOrder(tx.QueryRow(ctx, `
		UPDATE orders SET status = $2, paying_since = NULL, updated_at = now()
		WHERE id = $1 AND `+cond+` RETURNING `+orderColumns, id, to))
	if errors.Is(err, pgx.ErrNoRows) {
		// Read again: this statement sees what committed while we waited for the locks.
		o, due, err = readOrder(ctx, tx, id)
		if err != nil {
			return Order{}, false, false, fmt.Errorf("read: %w", err)
		}
		return o, due, false, nil
	}
	if err != nil {
		return Order{}, false, false, fmt.Errorf("set %s: %w", to, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE sale_items SET sold = sold - 1 WHERE sale_id = $1 AND id = $2`,
		o.SaleID, o.ItemID); err != nil {
		return Order{}, false, false, fmt.Errorf("return unit to item %s/%s: %w", o.SaleID, o.ItemID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Order{}, false, false, err
	}
	return o, false, true, nil
}
