package orders_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// TestPlaceBatchOfManyItemsAnswersInTheCallersOrder: a batch whose items interleave is sent in item
// order and answered in the caller's, each item counted against its own quantity.
func TestPlaceBatchOfManyItemsAnswersInTheCallersOrder(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "a", Quantity: 2}, sale.Item{ID: "b", Quantity: 1})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	batch := []orders.Placement{
		placement("s", "b", "u1", 0), placement("s", "a", "u1", 0), placement("s", "b", "u2", 0),
		placement("s", "a", "u2", 0), placement("s", "a", "u3", 0), placement("s", "a", "u1", 0),
	}
	want := []string{"placed ", "placed ", "refused oversold", "placed ", "refused oversold", "refused oversold"}
	res, err := s.PlaceBatch(ctx, batch)
	if err != nil {
		t.Fatalf("place batch: %v", err)
	}
	for i, r := range res {
		if got := r.Result.String() + " " + r.Reason; got != want[i] || r.OrderID != batch[i].OrderID {
			t.Errorf("placement %d (%s %s): got %q for %s, want %q", i, batch[i].ItemID, batch[i].UserID, got, r.OrderID, want[i])
		}
	}
	c := countsOf(t, s, "s")
	if c["a"].Sold != 2 || c["a"].Pending != 2 || c["b"].Sold != 1 || c["b"].Pending != 1 {
		t.Fatalf("counts: got %+v, want a 2 sold and pending, b 1", c)
	}
}

// TestPlaceBatchOfOneHotItem: a consumer's batch of one item, larger than its stock, places up to
// the quantity and refuses the rest, and the item's sold count says so, whatever runs of the item
// the batch holds (the count is added once a run).
func TestPlaceBatchOfOneHotItem(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "hot", Quantity: 300})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	batch := make([]orders.Placement, 500)
	for i := range batch {
		batch[i] = placement("s", "hot", userN(i), 0)
	}
	res, err := s.PlaceBatch(ctx, batch)
	if err != nil {
		t.Fatalf("place batch: %v", err)
	}
	for i, r := range res {
		if want := i < 300; (r.Result == orders.Placed) != want || (!want && r.Reason != orders.ReasonOversold) {
			t.Fatalf("placement %d: got %+v, want placed for the first 300, oversold after", i, r)
		}
	}
	if c := countsOf(t, s, "s")["hot"]; c.Sold != 300 || c.Pending != 300 {
		t.Fatalf("counts: got %+v, want sold = pending = 300", c)
	}
	// Runs of one item that place_orders meets apart (a caller that does not sort): each run takes
	// the row's lock and count afresh, so the count still holds.
	if err := s.SaveSale(ctx, testSale("t", sale.Item{ID: "a", Quantity: 2}, sale.Item{ID: "b", Quantity: 5})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	var answers []string
	err = s.Pool().QueryRow(ctx, `SELECT place_orders($1, '{t,t,t,t}', '{a,b,a,a}', '{u1,u1,u2,u3}', '{0,0,0,0}', '{0,0,0,0}',
		ARRAY[now(), now(), now(), now()], ARRAY[now(), now(), now(), now()], '{0,0,0,0}', '{NULL,NULL,NULL,NULL}', '{NULL,NULL,NULL,NULL}')`,
		[]uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}).Scan(&answers)
	if err != nil {
		t.Fatalf("place_orders with runs apart: %v", err)
	}
	if strings.Join(answers, " ") != "placed placed placed oversold" {
		t.Fatalf("place_orders with runs apart: %v, want placed placed placed oversold", answers)
	}
	if c := countsOf(t, s, "t"); c["a"].Sold != 2 || c["a"].Pending != 2 || c["b"].Sold != 1 {
		t.Fatalf("counts with runs apart: got %+v, want a 2, b 1", c)
	}
	// Arrays that do not line up are refused, and nothing is placed.
	err = s.Pool().QueryRow(ctx, `SELECT place_orders($1, '{t}', '{b}', '{u9}', '{0}', '{0}', ARRAY[now()], ARRAY[now()], '{0}', '{NULL}', '{}')`,
		[]uuid.UUID{uuid.New()}).Scan(&answers)
	if err == nil || !strings.Contains(err.Error(), "one element an order") {
		t.Fatalf("place_orders with a short array: %v, want it refused", err)
	}
	if c := countsOf(t, s, "t")["b"]; c.Sold != 1 {
		t.Fatalf("after a refused call: b sold %d, want 1", c.Sold)
	}
}

// TestPlaceBatchKeepsIdempotencyKeys: a placed order keeps its buyer's key; a redelivery gives an
// order placed without one its key, and never replaces a key the order has.
func TestPlaceBatchKeepsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 10})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	keyed, bare, none := placement("s", "item", "u1", 0), placement("s", "item", "u2", 0), placement("s", "item", "u3", 0)
	keyed.IdemKey = "k-1"
	mustPlace(t, s, []orders.Placement{keyed, bare, none}, orders.Placed)
	if got := idemKeyOf(t, s, keyed.OrderID) + " " + idemKeyOf(t, s, bare.OrderID) + " " + idemKeyOf(t, s, none.OrderID); got != "k-1 <none> <none>" {
		t.Fatalf("keys after placing: %s, want k-1 <none> <none>", got)
	}
	keyed.IdemKey, bare.IdemKey = "k-other", "k-2"
	mustPlace(t, s, []orders.Placement{keyed, bare, none}, orders.Duplicate)
	if got := idemKeyOf(t, s, keyed.OrderID) + " " + idemKeyOf(t, s, bare.OrderID) + " " + idemKeyOf(t, s, none.OrderID); got != "k-1 k-2 <none>" {
		t.Fatalf("keys after the redelivery: %s, want k-1 k-2 <none>", got)
	}
}

// TestPlaceBatchDecidesAgainstItsOwnOrders: the orders of a batch are decided against the orders it
// placed before them as against the table's: the same order twice (the second a redelivery, whose
// key the first takes when it had none), the same per-user slot, the same per-sale slot in one item
// and across items.
func TestPlaceBatchDecidesAgainstItsOwnOrders(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	sl := testSale("s", sale.Item{ID: "a", Quantity: 10}, sale.Item{ID: "b", Quantity: 10})
	sl.PerSaleLimit = 2
	if err := s.SaveSale(ctx, sl); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	twice := placement("s", "a", "u1", 0)
	again := twice
	again.IdemKey = "k-again"
	batch := []orders.Placement{
		twice, again,
		placement("s", "a", "u2", 1), placement("s", "a", "u2", 1),
		inSaleSlot(placement("s", "a", "u3", 0), 0), inSaleSlot(placement("s", "a", "u3", 1), 0), inSaleSlot(placement("s", "a", "u3", 1), 1),
		inSaleSlot(placement("s", "b", "u3", 0), 1), inSaleSlot(placement("s", "b", "u4", 0), 1),
	}
	want := []string{"placed ", "duplicate ", "placed ", "refused limit", "placed ", "refused sale_limit", "placed ", "refused sale_limit", "placed "}
	res, err := s.PlaceBatch(ctx, batch)
	if err != nil {
		t.Fatalf("place batch: %v", err)
	}
	for i, r := range res {
		if got := r.Result.String() + " " + r.Reason; got != want[i] {
			t.Errorf("placement %d (%s %s): got %q, want %q", i, batch[i].ItemID, batch[i].UserID, got, want[i])
		}
	}
	c := countsOf(t, s, "s")
	if c["a"].Sold != 4 || c["a"].Pending != 4 || c["b"].Sold != 1 || c["b"].Pending != 1 {
		t.Fatalf("counts: got %+v, want a 4 sold and pending, b 1", c)
	}
	if key := idemKeyOf(t, s, twice.OrderID); key != "k-again" {
		t.Fatalf("the twice-sent order's key: %s, want k-again (the redelivery's, the first had none)", key)
	}
}

// idemKeyOf reads the Idempotency-Key an order keeps in PostgreSQL, "<none>" for none.
func idemKeyOf(t *testing.T, s *orders.Store, id uuid.UUID) string {
	t.Helper()
	var k *string
	if err := s.Pool().QueryRow(context.Background(), `SELECT idem_key FROM orders WHERE id = $1`, id).Scan(&k); err != nil {
		t.Fatalf("read the key of order %s: %v", id, err)
	}
	if k == nil {
		return "<none>"
	}
	return *k
}
