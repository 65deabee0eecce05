package orders_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/google/uuid"
)

func TestExpireDue(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "a", Quantity: 10}, sale.Item{ID: "b", Quantity: 10})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	// Five due orders over two items, oldest first: a0 b1 a2 b3 a4.
	var due []orders.Placement
	for i := range 5 {
		p := placement("s", []string{"a", "b"}[i%2], userN(i), i%3)
		p.Shard = i
		mustPlace(t, s, []orders.Placement{p}, orders.Placed)
		if _, err := s.Pool().Exec(ctx, `UPDATE orders SET expires_at = now() - make_interval(secs => 10 - $2) WHERE id = $1`,
			p.OrderID, i); err != nil {
			t.Fatalf("make due: %v", err)
		}
		due = append(due, p)
	}
	notDue := placement("s", "a", "patient", 0)
	claimed := placement("s", "b", "paying", 0)
	mustPlace(t, s, []orders.Placement{notDue, claimed}, orders.Placed)
	mustClaim(t, s, claimed)
	makeDue(t, s, claimed.OrderID)

	if _, err := s.ExpireDue(ctx, 0); err == nil {
		t.Fatal("limit 0: want an error")
	}
	first, err := s.ExpireDue(ctx, 3)
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if got, want := ids(first), ids(placementsAsOrders(due[:3])); !slices.Equal(got, want) {
		t.Fatalf("first call: got %v, want the 3 oldest %v", got, want)
	}
	for _, o := range first {
		p := due[slices.IndexFunc(due, func(p orders.Placement) bool { return p.OrderID == o.ID })]
		if o.Status != orders.StatusExpired || o.Shard != p.Shard || o.UserID != p.UserID || o.Slot != p.Slot || o.ItemID != p.ItemID {
			t.Errorf("expired order %+v does not carry its placement %+v", o, p)
		}
	}
	rest, err := s.ExpireDue(ctx, 100)
	if err != nil {
		t.Fatalf("expire: %v", err)
	}
	if got, want := ids(rest), ids(placementsAsOrders(due[3:])); !slices.Equal(got, want) {
		t.Fatalf("second call: got %v, want %v", got, want)
	}
	if again, err := s.ExpireDue(ctx, 100); err != nil || len(again) != 0 {
		t.Fatalf("third call: got %+v, %v; want nothing", again, err)
	}
	checkOrder(t, s, notDue.OrderID, orders.StatusPending, false)
	checkOrder(t, s, claimed.OrderID, orders.StatusPending, true)
	checkItem(t, s, "s", "a", 1)
	checkItem(t, s, "s", "b", 1)
	if c := countsOf(t, s, "s"); c["a"].Expired != 3 || c["b"].Expired != 2 {
		t.Fatalf("counts: got %+v, want 3 expired of a and 2 of b", c)
	}
}

func TestStuckClaims(t *testing.T) {
	t.Parallel()
	s := lifecycleStore(t)
	ctx := context.Background()
	fresh := placeIn(t, s, "u1", stateClaimed)
	stuck := placeIn(t, s, "u2", stateClaimed)
	paid := placeIn(t, s, "u3", statePaid)
	placeIn(t, s, "u4", statePending)
	if _, err := s.Pool().Exec(ctx, `UPDATE orders SET paying_since = now() - interval '10 minutes' WHERE id = $1`,
		stuck.OrderID); err != nil {
		t.Fatalf("age claim: %v", err)
	}
	got, err := s.StuckClaims(ctx, 5*time.Minute, 10)
	if err != nil {
		t.Fatalf("stuck claims: %v", err)
	}
	if len(got) != 1 || got[0].ID != stuck.OrderID || got[0].PayingSince == nil || got[0].Shard != 3 {
		t.Fatalf("got %+v; want just %s (not %s or %s)", got, stuck.OrderID, fresh.OrderID, paid.OrderID)
	}
	if got, err := s.StuckClaims(ctx, 0, 10); err != nil || len(got) != 2 {
		t.Fatalf("older than 0: got %+v, %v; want both claims", got, err)
	}
}

func TestStatuses(t *testing.T) {
	t.Parallel()
	s := lifecycleStore(t)
	ctx := context.Background()
	pending := placeIn(t, s, "u1", statePending)
	cancelled := placeIn(t, s, "u2", stateCancelled)
	missing := uuid.Must(uuid.NewV7())
	got, err := s.Statuses(ctx, []uuid.UUID{pending.OrderID, cancelled.OrderID, missing})
	if err != nil {
		t.Fatalf("statuses: %v", err)
	}
	want := map[uuid.UUID]string{pending.OrderID: orders.StatusPending, cancelled.OrderID: orders.StatusCancelled}
	if len(got) != len(want) || got[pending.OrderID] != want[pending.OrderID] || got[cancelled.OrderID] != want[cancelled.OrderID] {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := s.Statuses(ctx, nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no ids: got %v, %v; want an empty map", got, err)
	}
}

func TestSaleIDs(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	now := time.Now()
	roomed := withTimes(testSale("running", sale.Item{ID: "x", Quantity: 1}), now.Add(-time.Hour), now.Add(time.Hour))
	roomed.Room = sale.Room{Enabled: true, AdmissionRate: 10}
	roomed.Normalize()
	for _, sl := range []sale.Sale{
		withTimes(testSale("open-ended", sale.Item{ID: "x", Quantity: 1}), now.Add(-72*time.Hour), time.Time{}),
		roomed,
		withTimes(testSale("just-ended", sale.Item{ID: "x", Quantity: 1}), now.Add(-72*time.Hour), now.Add(-time.Hour)),
		withTimes(testSale("long-over", sale.Item{ID: "x", Quantity: 1}), now.Add(-72*time.Hour), now.Add(-48*time.Hour)),
	} {
		if err := s.SaveSale(ctx, sl); err != nil {
			t.Fatalf("save sale %s: %v", sl.ID, err)
		}
	}
	got, err := s.SaleIDs(ctx)
	if err != nil {
		t.Fatalf("sale ids: %v", err)
	}
	if want := []string{"just-ended", "open-ended", "running"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	got, err = s.RoomSaleIDs(ctx)
	if err != nil || !slices.Equal(got, []string{"running"}) {
		t.Fatalf("room sale ids: %v %v, want [running]", got, err)
	}
}

func TestMarkPaidBatch(t *testing.T) {
	t.Parallel()
	s := lifecycleStore(t)
	ctx := context.Background()
	claimed := placeIn(t, s, "u1", stateClaimed)
	pending := placeIn(t, s, "u2", statePending)
	paid := placeIn(t, s, "u3", statePaid)
	expired := placeIn(t, s, "u4", stateExpired)
	missing := uuid.Must(uuid.NewV7())
	marks := []orders.PaidMark{
		{OrderID: claimed.OrderID, PaymentRef: "r1"},
		{OrderID: missing, PaymentRef: "r2"},
		{OrderID: paid.OrderID, PaymentRef: "r3"},
		{OrderID: pending.OrderID, PaymentRef: "r4"},
		{OrderID: expired.OrderID, PaymentRef: "r5"},
		{OrderID: pending.OrderID, PaymentRef: "r6"}, // a redelivery inside the batch
	}
	got, err := s.MarkPaidBatch(ctx, marks)
	if err != nil {
		t.Fatalf("mark paid batch: %v", err)
	}
	want := []struct {
		changed, missing bool
		status, ref      string
	}{
		{true, false, orders.StatusPaid, "r1"},
		{false, true, "", ""},
		{false, false, orders.StatusPaid, "ref-1"},
		{true, false, orders.StatusPaid, "r4"},
		{false, false, orders.StatusExpired, ""},
		{false, false, orders.StatusPaid, "r4"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.OrderID != marks[i].OrderID || r.Changed != w.changed || r.Missing != w.missing || r.Status != w.status || r.PaymentRef != w.ref {
			t.Errorf("mark %d: got %+v, want %+v", i, r, w)
		}
		if !r.Missing && (r.ID != marks[i].OrderID || r.SaleID != "s" || r.ItemID != "item" || r.Shard != 3 || r.UserID == "" || r.PayingSince != nil) {
			t.Errorf("mark %d: result does not carry its order: %+v", i, r)
		}
	}
	checkItem(t, s, "s", "item", 3)
	if again, err := s.MarkPaidBatch(ctx, marks[:1]); err != nil || again[0].Changed || again[0].PaymentRef != "r1" {
		t.Fatalf("redelivered batch: got %+v, %v; want unchanged", again, err)
	}
	if got, err := s.MarkPaidBatch(ctx, nil); err != nil || got != nil {
		t.Fatalf("empty batch: got %v, %v", got, err)
	}
}

func withTimes(sl sale.Sale, opens, closes time.Time) sale.Sale {
	sl.OpensAt, sl.ClosesAt = opens.UTC().Truncate(time.Second), closes
	return sl
}

func placementsAsOrders(ps []orders.Placement) []orders.Order {
	out := make([]orders.Order, len(ps))
	for i, p := range ps {
		out[i].ID = p.OrderID
	}
	return out
}

// ids lists the orders' ids, sorted, to compare sets.
func ids(os []orders.Order) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.ID.String()
	}
	slices.Sort(out)
	return out
}
