package orders_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/google/uuid"
)

// testNow is the creation time of test orders: real time, since PostgreSQL judges their 10-minute
// holds by its own clock (a fixed date here expired every hold once the day passed it).
var testNow = time.Now().UTC().Truncate(time.Second)

func userN(i int) string { return fmt.Sprintf("user-%04d", i) }

func placement(saleID, itemID, user string, slot int) orders.Placement {
	return orders.Placement{
		OrderID:   uuid.Must(uuid.NewV7()),
		SaleID:    saleID,
		ItemID:    itemID,
		UserID:    user,
		Slot:      slot,
		CreatedAt: testNow,
		ExpiresAt: testNow.Add(10 * time.Minute),
	}
}

// mustPlace places ps and fails unless every one answers want.
func mustPlace(tb testing.TB, s *orders.Store, ps []orders.Placement, want orders.Result) {
	tb.Helper()
	res, err := s.PlaceBatch(context.Background(), ps)
	if err != nil {
		tb.Fatalf("place batch: %v", err)
	}
	for i, r := range res {
		if r.Result != want || r.OrderID != ps[i].OrderID {
			tb.Fatalf("placement %d: got %+v, want %v for %s", i, r, want, ps[i].OrderID)
		}
	}
}

func countsOf(tb testing.TB, s *orders.Store, saleID string) map[string]orders.ItemCounts {
	tb.Helper()
	cs, err := s.Counts(context.Background(), saleID)
	if err != nil {
		tb.Fatalf("counts: %v", err)
	}
	m := make(map[string]orders.ItemCounts, len(cs))
	for _, c := range cs {
		m[c.ItemID] = c
	}
	return m
}

func TestPlaceBatch(t *testing.T) {
	t.Parallel()
	type want struct {
		result orders.Result
		reason string
	}
	placed := want{result: orders.Placed}
	tests := []struct {
		name     string
		quantity int64
		prior    func() []orders.Placement // placed (all Placed) before the batch under test
		batch    func(prior []orders.Placement) []orders.Placement
		want     []want
		wantSold int64
	}{
		{
			name:     "places a batch",
			quantity: 10,
			batch: func([]orders.Placement) []orders.Placement {
				return []orders.Placement{placement("s", "item", "u1", 0), placement("s", "item", "u2", 0)}
			},
			want:     []want{placed, placed},
			wantSold: 2,
		},
		{
			name:     "redelivered batch is a no-op",
			quantity: 10,
			prior: func() []orders.Placement {
				return []orders.Placement{placement("s", "item", "u1", 0), placement("s", "item", "u2", 0)}
			},
			batch:    func(prior []orders.Placement) []orders.Placement { return prior },
			want:     []want{{result: orders.Duplicate}, {result: orders.Duplicate}},
			wantSold: 2,
		},
		{
			name:     "over quantity is refused as oversold",
			quantity: 2,
			batch: func([]orders.Placement) []orders.Placement {
				return []orders.Placement{
					placement("s", "item", "u1", 0), placement("s", "item", "u2", 0),
					placement("s", "item", "u3", 0), placement("s", "item", "u4", 0),
				}
			},
			want:     []want{placed, placed, {orders.Refused, orders.ReasonOversold}, {orders.Refused, orders.ReasonOversold}},
			wantSold: 2,
		},
		{
			name:     "redelivery after sell-out is still a duplicate",
			quantity: 1,
			prior:    func() []orders.Placement { return []orders.Placement{placement("s", "item", "u1", 0)} },
			batch:    func(prior []orders.Placement) []orders.Placement { return prior },
			want:     []want{{result: orders.Duplicate}},
			wantSold: 1,
		},
		{
			name:     "second live order in a slot hits the limit, another slot is fine",
			quantity: 10,
			prior:    func() []orders.Placement { return []orders.Placement{placement("s", "item", "u1", 0)} },
			batch: func([]orders.Placement) []orders.Placement {
				return []orders.Placement{placement("s", "item", "u1", 0), placement("s", "item", "u1", 1)}
			},
			want:     []want{{orders.Refused, orders.ReasonLimit}, placed},
			wantSold: 2,
		},
		{
			name:     "same slot twice in one batch",
			quantity: 10,
			batch: func([]orders.Placement) []orders.Placement {
				return []orders.Placement{placement("s", "item", "u1", 3), placement("s", "item", "u1", 3)}
			},
			want:     []want{placed, {orders.Refused, orders.ReasonLimit}},
			wantSold: 1,
		},
		{
			name:     "missing item or sale",
			quantity: 10,
			batch: func([]orders.Placement) []orders.Placement {
				return []orders.Placement{placement("s", "ghost", "u1", 0), placement("nosale", "item", "u1", 0), placement("s", "item", "u1", 0)}
			},
			want:     []want{{orders.Refused, orders.ReasonUnknownItem}, {orders.Refused, orders.ReasonUnknownItem}, placed},
			wantSold: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t)
			ctx := context.Background()
			if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: tc.quantity})); err != nil {
				t.Fatalf("save sale: %v", err)
			}
			var prior []orders.Placement
			if tc.prior != nil {
				prior = tc.prior()
				mustPlace(t, s, prior, orders.Placed)
			}
			batch := tc.batch(prior)
			res, err := s.PlaceBatch(ctx, batch)
			if err != nil {
				t.Fatalf("place batch: %v", err)
			}
			if len(res) != len(tc.want) {
				t.Fatalf("got %d results, want %d", len(res), len(tc.want))
			}
			for i, r := range res {
				if r.OrderID != batch[i].OrderID || r.Result != tc.want[i].result || r.Reason != tc.want[i].reason {
					t.Errorf("placement %d: got %+v, want %v %q", i, r, tc.want[i].result, tc.want[i].reason)
				}
			}
			c := countsOf(t, s, "s")["item"]
			if c.Sold != tc.wantSold || c.Pending != tc.wantSold || c.Sold > c.Quantity {
				t.Errorf("counts: got %+v, want sold = pending = %d", c, tc.wantSold)
			}
		})
	}
}

func TestPlaceBatchErrorCommitsNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 10})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	good := placement("s", "item", "u1", 0)
	bad := placement("s", "item", strings.Repeat("x", 129), 0) // violates the user id CHECK
	if _, err := s.PlaceBatch(ctx, []orders.Placement{good, bad}); err == nil {
		t.Fatal("batch with an invalid user id: want an error")
	}
	if c := countsOf(t, s, "s")["item"]; c.Sold != 0 || c.Pending != 0 {
		t.Fatalf("after failed batch: got %+v, want nothing committed", c)
	}
	// The same good placement goes through on retry: the failed batch left no trace.
	mustPlace(t, s, []orders.Placement{good}, orders.Placed)
}

func TestPlaceBatchCheckKeepsSoldWithinQuantity(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 1})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	_, err := s.Pool().Exec(ctx, `UPDATE sale_items SET sold = quantity + 1 WHERE sale_id = 's'`)
	if err == nil || !strings.Contains(err.Error(), "sale_items_sold_le_quantity") {
		t.Fatalf("raising sold past quantity: got %v, want the CHECK to refuse", err)
	}
}

func TestPlaceBatchConcurrentNeverOversells(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("hot", sale.Item{ID: "item", Quantity: 100})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	const workers, perWorker = 20, 10 // 200 distinct orders for 100 units
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		tally = map[string]int{}
		errs  []error
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				// Batches of 2 to exercise the batch path under contention too.
				if i%2 == 1 {
					continue
				}
				ps := []orders.Placement{
					placement("hot", "item", userN(w*perWorker+i), 0),
					placement("hot", "item", userN(w*perWorker+i+1), 0),
				}
				res, err := s.PlaceBatch(ctx, ps)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, r := range res {
					tally[r.Result.String()+" "+r.Reason]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d batches failed, first: %v", len(errs), errs[0])
	}
	if tally["placed "] != 100 || tally["refused oversold"] != 100 {
		t.Fatalf("results: got %v, want 100 placed and 100 refused oversold", tally)
	}
	if c := countsOf(t, s, "hot")["item"]; c.Sold != 100 || c.Pending != 100 || c.Quantity != 100 {
		t.Fatalf("counts: got %+v, want sold = pending = 100", c)
	}
}

// TestPlaceBatchFencesAnOlderEpoch: once a rebuild bumped an item's epoch, a placement made on the
// state before it is dropped as stale (nothing counted), one already recorded stays a duplicate,
// and placements of the new epoch are recorded.
func TestPlaceBatchFencesAnOlderEpoch(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 5})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	before := placement("s", "item", userN(1), 0)
	mustPlace(t, s, []orders.Placement{before}, orders.Placed)
	epochs, err := s.NextEpochs(ctx, "s")
	if err != nil || epochs["item"] != 1 {
		t.Fatalf("next epochs: %v %v, want item 1", epochs, err)
	}
	late := placement("s", "item", userN(2), 0)
	mustPlace(t, s, []orders.Placement{late}, orders.Stale)
	mustPlace(t, s, []orders.Placement{before}, orders.Duplicate)
	fresh := placement("s", "item", userN(2), 0)
	fresh.Epoch = 1
	mustPlace(t, s, []orders.Placement{fresh}, orders.Placed)
	if c := countsOf(t, s, "s")["item"]; c.Sold != 2 {
		t.Fatalf("sold %d, want 2 (the stale placement counts nothing)", c.Sold)
	}
	if got, err := s.Epochs(ctx, "s"); err != nil || got["item"] != 1 {
		t.Fatalf("epochs: %v %v, want item 1", got, err)
	}
}
