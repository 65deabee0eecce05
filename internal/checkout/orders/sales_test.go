package orders_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

func testSale(id string, items ...sale.Item) sale.Sale {
	return sale.Sale{
		ID:           id,
		Name:         "Sale " + id,
		OpensAt:      time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		PerUserLimit: 2,
		HoldTTL:      90 * time.Second,
		Items:        items,
	}
}

func TestSaveLoadSaleRoundTrip(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	want := testSale("spring",
		sale.Item{ID: "b-shoe", Name: "Shoe", Quantity: 10, PriceCents: 4999, Shards: 4},
		sale.Item{ID: "a-hat", Name: "Hat", Quantity: 3, PriceCents: 1500, Shards: 1},
	)
	want.ClosesAt = want.OpensAt.Add(time.Hour)
	want.WaitReplicas, want.WaitTimeout, want.WaitPolicy = 1, 20*time.Millisecond, sale.WaitPolicyRelease
	want.Room = sale.Room{Enabled: true, AdmissionRate: 12.5, MaxActive: 300, FairStart: sale.FairStartRandom,
		WaiterTTL: 30 * time.Second, ActiveTTL: time.Minute, PowDifficulty: 8, FailMode: sale.FailOpen}
	want.RateLimits = sale.RateLimits{PerUser: 5, PerUserBurst: 10, PerAddress: 50, PerAddressBurst: 50}
	want.PerSaleLimit = 1
	want.Reveal = sale.Reveal{Enabled: true, TTL: 45 * time.Second}
	if err := s.SaveSale(ctx, want); err != nil {
		t.Fatalf("save: %v", err)
	}
	got, err := s.LoadSale(ctx, "spring")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	want.Items = []sale.Item{want.Items[1], want.Items[0]} // loaded by item id
	first := got.Revision
	if first <= 0 {
		t.Fatalf("room revision %d, want the row's last change", first)
	}
	got.Revision = 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}

	// Saving again updates in place, drops an item without orders and adds a new one.
	want = testSale("spring",
		sale.Item{ID: "b-shoe", Name: "Shoe v2", Quantity: 12, PriceCents: 3999, Shards: 1},
		sale.Item{ID: "c-bag", Name: "Bag", Quantity: 1, Shards: 1},
	)
	want.Paused = true
	want.PerUserLimit = 1
	if err := s.SaveSale(ctx, want); err != nil {
		t.Fatalf("second save: %v", err)
	}
	got, err = s.LoadSale(ctx, "spring")
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	second := got.Revision
	if second <= first {
		t.Fatalf("room revision after an update %d, want above %d", second, first)
	}
	got.Revision = 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after update:\n got %+v\nwant %+v", got, want)
	}

	// An operator's room change moves the revision on, and the sale then loads with it.
	rev, err := s.SetRoom(ctx, "spring", sale.Room{Enabled: true, AdmissionRate: 3, Paused: true})
	if err != nil || rev <= second {
		t.Fatalf("set room: revision %d, %v; want above %d", rev, err, second)
	}
	if got, err = s.LoadSale(ctx, "spring"); err != nil || got.Revision != rev || !got.Room.Paused {
		t.Fatalf("load after set room: %+v, %v; want revision %d and paused", got, err, rev)
	}
	if _, err := s.SetRoom(ctx, "nope", sale.Room{}); outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("set room of a missing sale: %v, want NotFound", err)
	}
}

func TestLoadSaleNotFound(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	_, err := s.LoadSale(context.Background(), "nope")
	if outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("got %v, want a NOT_FOUND error", err)
	}
}

func TestSaveSaleGuardsSoldUnits(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	sl := testSale("guard", sale.Item{ID: "tv", Quantity: 5}, sale.Item{ID: "radio", Quantity: 5})
	if err := s.SaveSale(ctx, sl); err != nil {
		t.Fatalf("save: %v", err)
	}
	var ps []orders.Placement
	for i := range 3 {
		ps = append(ps, placement("guard", "tv", userN(i), 0))
	}
	mustPlace(t, s, ps, orders.Placed)

	tests := []struct {
		name    string
		items   []sale.Item
		wantErr string
	}{
		{"quantity below sold", []sale.Item{{ID: "tv", Quantity: 2}, {ID: "radio", Quantity: 5}}, "below the 3 units already sold"},
		{"remove item with orders", []sale.Item{{ID: "radio", Quantity: 5}}, "have orders"},
		{"invalid definition", []sale.Item{{ID: "bad id", Quantity: 5}}, "must match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := testSale("guard", tc.items...)
			err := s.SaveSale(ctx, bad)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}

	// Lowering to exactly what is sold is allowed, and sold is left alone.
	sl.Items[0].Quantity = 3
	if err := s.SaveSale(ctx, sl); err != nil {
		t.Fatalf("lower to sold: %v", err)
	}
	c := countsOf(t, s, "guard")["tv"]
	if c.Quantity != 3 || c.Sold != 3 || c.Pending != 3 {
		t.Fatalf("tv counts: got %+v, want quantity 3, sold 3, pending 3", c)
	}
}
