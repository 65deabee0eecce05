package orders_test

import (
	"context"
	"sync"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

func inSaleSlot(p orders.Placement, slot int) orders.Placement {
	p.SaleSlot = &slot
	return p
}

// TestPlaceBatchKeepsPerSaleSlots: PostgreSQL's net under the per-sale limit. A buyer's live orders
// of one sale hold distinct per-sale slots whatever their items: a second order in a slot the buyer
// holds is refused (sale_limit) and counts nothing; an order without a slot (a sale without the
// limit) is not checked; a closed order frees its slot.
func TestPlaceBatchKeepsPerSaleSlots(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	id := testenv.ID(t, "persale")
	sl := testSale(id, sale.Item{ID: "a", Quantity: 10}, sale.Item{ID: "b", Quantity: 10})
	sl.PerSaleLimit = 1
	if err := s.SaveSale(ctx, sl); err != nil {
		t.Fatal(err)
	}
	first := inSaleSlot(placement(id, "a", "u", 0), 0)
	mustPlace(t, s, []orders.Placement{first}, orders.Placed)
	res, err := s.PlaceBatch(ctx, []orders.Placement{inSaleSlot(placement(id, "b", "u", 0), 0), inSaleSlot(placement(id, "b", "v", 0), 0)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Result != orders.Refused || res[0].Reason != orders.ReasonSaleLimit || res[1].Result != orders.Placed {
		t.Fatalf("second order in the buyer's slot, another buyer's first: %+v, want refused sale_limit, placed", res)
	}
	if c := countsOf(t, s, id)["b"]; c.Sold != 1 {
		t.Fatalf("item b sold %d, want 1 (the refused order counts nothing)", c.Sold)
	}
	mustPlace(t, s, []orders.Placement{inSaleSlot(placement(id, "b", "u", 0), 1)}, orders.Placed)
	mustPlace(t, s, []orders.Placement{placement(id, "b", "w", 0)}, orders.Placed)
	if _, changed, err := s.Cancel(ctx, first.OrderID, "u"); err != nil || !changed {
		t.Fatalf("cancel: %v %v", changed, err)
	}
	mustPlace(t, s, []orders.Placement{inSaleSlot(placement(id, "b", "u", 1), 0)}, orders.Placed)
}

// TestPlaceBatchPerSaleSlotsUnderContention: one buyer's orders of different items in the same
// per-sale slot, placed at once by concurrent batches (the item row locks do not serialise them):
// exactly one is recorded. A batch the unique index failed is retried, as the consumer does, and
// then answers sale_limit.
func TestPlaceBatchPerSaleSlotsUnderContention(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	id := testenv.ID(t, "persale")
	const items = 12
	sl := testSale(id)
	for i := range items {
		sl.Items = append(sl.Items, sale.Item{ID: "i" + string(rune('a'+i)), Quantity: 5})
	}
	sl.PerSaleLimit = 1
	if err := s.SaveSale(ctx, sl); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	tally := map[string]int{}
	retries := 0
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, it := range sl.Items {
		wg.Go(func() {
			p := inSaleSlot(placement(id, it.ID, "u", 0), 0)
			<-start
			for {
				res, err := s.PlaceBatch(ctx, []orders.Placement{p})
				mu.Lock()
				if err != nil {
					retries++
					mu.Unlock()
					continue
				}
				tally[res[0].Result.String()+" "+res[0].Reason]++
				mu.Unlock()
				return
			}
		})
	}
	close(start)
	wg.Wait()
	if tally["placed "] != 1 || tally["refused sale_limit"] != items-1 {
		t.Fatalf("results %v (after %d retried batches), want 1 placed and %d refused sale_limit", tally, retries, items-1)
	}
	t.Logf("%d batches failed on the unique index and were retried", retries)
}
