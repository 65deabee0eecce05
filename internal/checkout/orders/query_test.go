package orders_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/google/uuid"
)

func TestGetOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 5})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	p := placement("s", "item", "alice@example.com", 7)
	mustPlace(t, s, []orders.Placement{p}, orders.Placed)

	got, err := s.GetOrder(ctx, p.OrderID)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.UpdatedAt.IsZero() {
		t.Fatalf("updated_at not set: %+v", got)
	}
	got.UpdatedAt = time.Time{}
	want := orders.Order{
		ID: p.OrderID, SaleID: "s", ItemID: "item", UserID: "alice@example.com", Slot: 7, Shards: 1,
		Status: orders.StatusPending, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("times: got %+v, want %+v", got, want)
	}
	got.CreatedAt, got.ExpiresAt = want.CreatedAt, want.ExpiresAt
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	_, err = s.GetOrder(ctx, uuid.Must(uuid.NewV7()))
	if outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("missing order: got %v, want NOT_FOUND", err)
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s",
		sale.Item{ID: "b", Quantity: 5}, sale.Item{ID: "a", Quantity: 3}, sale.Item{ID: "c", Quantity: 1})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	var ps []orders.Placement
	for i := range 4 {
		ps = append(ps, placement("s", "b", userN(i), 0))
	}
	ps = append(ps, placement("s", "a", userN(0), 0))
	mustPlace(t, s, ps, orders.Placed)
	// Statuses change elsewhere (payment, expiry); set them directly to see each one counted.
	for i, st := range []string{orders.StatusPaid, orders.StatusExpired, orders.StatusCancelled} {
		if _, err := s.Pool().Exec(ctx, `UPDATE orders SET status = $1 WHERE id = $2`, st, ps[i].OrderID); err != nil {
			t.Fatalf("set status: %v", err)
		}
	}
	got, err := s.Counts(ctx, "s")
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	want := []orders.ItemCounts{
		{ItemID: "a", Quantity: 3, Sold: 1, Pending: 1},
		{ItemID: "b", Quantity: 5, Sold: 4, Pending: 1, Paid: 1, Expired: 1, Cancelled: 1},
		{ItemID: "c", Quantity: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got, err := s.Counts(ctx, "nosale"); err != nil || len(got) != 0 {
		t.Fatalf("unknown sale: got %v, %v; want empty", got, err)
	}
}
