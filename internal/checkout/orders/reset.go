package orders

import (
	"context"
	"fmt"
)

// ResetSale deletes every order of a sale and sets its items' sold back to zero, in one
// transaction. It is for demos, tests and rehearsals, never for a sale that has really run.
func (s *Store) ResetSale(ctx context.Context, saleID string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("reset sale %s: %w", saleID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `DELETE FROM orders WHERE sale_id = $1`, saleID); err != nil {
		return fmt.Errorf("reset sale %s: delete orders: %w", saleID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE sale_items SET sold = 0 WHERE sale_id = $1`, saleID); err != nil {
		return fmt.Errorf("reset sale %s: zero sold: %w", saleID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("reset sale %s: %w", saleID, err)
	}
	return nil
}
