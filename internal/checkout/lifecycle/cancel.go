package lifecycle

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// Cancel cancels a buyer's unpaid order and releases its unit once: PostgreSQL commits CANCELLED
// first, then Redis gets the unit back. Cancelling a cancelled order answers the same again.
func (s *Service) Cancel(ctx context.Context, id uuid.UUID, userID string) (orders.Order, error) {
	var o orders.Order
	var changed bool
	err := s.recorded(ctx, id, userID, func(ctx context.Context) (err error) {
		o, changed, err = s.Orders.Cancel(ctx, id, userID)
		return err
	})
	if err != nil {
		return orders.Order{}, err
	}
	if changed {
		s.release(ctx, o, "cancelled")
	}
	return o, nil
}

// recorded runs op, and when op finds no such order while Redis shows the buyer's hold still on
// its way to PostgreSQL, retries it for up to RecordWait: a buyer may pay or cancel within
// milliseconds of the reserve, before the consumer has written the row.
func (s *Service) recorded(ctx context.Context, id uuid.UUID, userID string, op func(context.Context) error) error {
	deadline := time.Now().Add(s.cfg.RecordWait)
	for {
		err := op(ctx)
		if outcome.CodeOf(err) != outcome.NotFound {
			return err
		}
		st, ok, lerr := s.Stock.LookupOrder(ctx, id)
		if lerr != nil || !ok || st.UserID != userID || st.Status != "PENDING" {
			return err
		}
		if time.Now().After(deadline) {
			return outcome.Errorf(outcome.OrderPending, "order %s is still being recorded; retry in a moment", id)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
