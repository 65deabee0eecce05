package orders_test

import (
	"context"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/google/uuid"
)

// Order states a lifecycle test can start from, each reached through the store's own transitions
// (except "due", a PENDING order whose expires_at is set into the past directly).
const (
	statePending   = "pending"
	stateClaimed   = "claimed"
	stateDue       = "due"
	statePaid      = "paid"
	stateExpired   = "expired"
	stateCancelled = "cancelled"
	stateFailed    = "failed"
)

// lifecycleStore gives a test its own database with sale "s" and item "item" (10 units, 4 shards).
func lifecycleStore(tb testing.TB) *orders.Store {
	tb.Helper()
	s := openStore(tb)
	if err := s.SaveSale(context.Background(), testSale("s", sale.Item{ID: "item", Quantity: 10, Shards: 4})); err != nil {
		tb.Fatalf("save sale: %v", err)
	}
	return s
}

// placeIn places one PENDING order of user on item "item" of sale "s", on shard 3, and brings it
// to state.
func placeIn(tb testing.TB, s *orders.Store, user, state string) orders.Placement {
	tb.Helper()
	ctx := context.Background()
	p := placement("s", "item", user, 0)
	p.Shard = 3
	mustPlace(tb, s, []orders.Placement{p}, orders.Placed)
	switch state {
	case statePending:
	case stateClaimed:
		mustClaim(tb, s, p)
	case stateDue:
		makeDue(tb, s, p.OrderID)
	case statePaid:
		mustClaim(tb, s, p)
		if _, changed, err := s.MarkPaid(ctx, p.OrderID, "ref-1"); err != nil || !changed {
			tb.Fatalf("mark paid: %v, %v", changed, err)
		}
	case stateExpired:
		makeDue(tb, s, p.OrderID)
		got, err := s.ExpireDue(ctx, 100)
		if err != nil || len(got) != 1 || got[0].ID != p.OrderID {
			tb.Fatalf("expire: got %+v, %v; want just %s", got, err, p.OrderID)
		}
	case stateCancelled:
		if _, changed, err := s.Cancel(ctx, p.OrderID, user); err != nil || !changed {
			tb.Fatalf("cancel: %v, %v", changed, err)
		}
	case stateFailed:
		mustClaim(tb, s, p)
		if _, changed, err := s.FailPayment(ctx, p.OrderID); err != nil || !changed {
			tb.Fatalf("fail payment: %v, %v", changed, err)
		}
	default:
		tb.Fatalf("unknown state %q", state)
	}
	return p
}

func mustClaim(tb testing.TB, s *orders.Store, p orders.Placement) orders.Order {
	tb.Helper()
	o, c, err := s.ClaimPayment(context.Background(), p.OrderID, p.UserID)
	if err != nil || c != orders.ClaimOK {
		tb.Fatalf("claim %s: got %v, %v; want ok", p.OrderID, c, err)
	}
	return o
}

// makeDue moves an order's expires_at into the past, as if its hold had run out.
func makeDue(tb testing.TB, s *orders.Store, id uuid.UUID) {
	tb.Helper()
	if _, err := s.Pool().Exec(context.Background(),
		`UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		tb.Fatalf("make order due: %v", err)
	}
}

func mustGet(tb testing.TB, s *orders.Store, id uuid.UUID) orders.Order {
	tb.Helper()
	o, err := s.GetOrder(context.Background(), id)
	if err != nil {
		tb.Fatalf("get order %s: %v", id, err)
	}
	return o
}

// checkItem fails unless the item's sold is wantSold and equals its live (pending + paid) orders.
func checkItem(tb testing.TB, s *orders.Store, saleID, itemID string, wantSold int64) orders.ItemCounts {
	tb.Helper()
	c := countsOf(tb, s, saleID)[itemID]
	if c.Sold != c.Pending+c.Paid || c.Sold != wantSold {
		tb.Errorf("item %s/%s: got %+v, want sold = pending + paid = %d", saleID, itemID, c, wantSold)
	}
	return c
}

// checkOrder fails unless the stored order has status and, exactly when claimed, a payment claim.
func checkOrder(tb testing.TB, s *orders.Store, id uuid.UUID, status string, claimed bool) orders.Order {
	tb.Helper()
	o := mustGet(tb, s, id)
	if o.Status != status || (o.PayingSince != nil) != claimed {
		tb.Errorf("order %s: got status %s, paying since %v; want %s, claimed %v", id, o.Status, o.PayingSince, status, claimed)
	}
	return o
}
