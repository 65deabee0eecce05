package orders

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// SetPaused records an operator's pause or resume of a sale, so a later preload keeps it.
func (s *Store) SetPaused(ctx context.Context, saleID string, paused bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sales SET paused = $2, updated_at = `+nextRevision+` WHERE id = $1`, saleID, paused)
	if err != nil {
		return fmt.Errorf("set sale %s paused=%v: %w", saleID, paused, err)
	}
	if tag.RowsAffected() == 0 {
		return outcome.Errorf(outcome.NotFound, "sale %s not found", saleID)
	}
	return nil
}

// MaxLivePerUser returns the most live (pending or paid) orders any one user holds of an item:
// the per-user limit as PostgreSQL sees it.
func (s *Store) MaxLivePerUser(ctx context.Context, saleID, itemID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(max(c), 0) FROM (
			SELECT count(*) AS c FROM orders
			WHERE sale_id = $1 AND item_id = $2 AND status IN ('PENDING', 'PAID')
			GROUP BY user_id) per_user`, saleID, itemID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("live orders per user of %s/%s: %w", saleID, itemID, err)
	}
	return n, nil
}
