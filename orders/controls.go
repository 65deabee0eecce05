package orders

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/outcome"
)

// SetPaused records an operator's pause or resume of a sale, so a later preload keeps it.
func (s *Store) SetPaused(ctx context.Context, saleID string, paused bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sales SET paused = $2, updated_at = now() WHERE id = $1`, saleID, paused)
	if err != nil {
		return fmt.Errorf("set sale %s paused=%v: %w", saleID, paused, err)
	}
	if tag.RowsAffected() == 0 {
		return outcome.Errorf(outcome.NotFound, "sale %s not found", saleID)
	}
	return nil
}
