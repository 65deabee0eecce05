package stock_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/stock"
)

// TestBatchStoreReserveRace proves batching changes no answer: 64 buyers racing for an item of 20
// units get exactly 20 RESERVED and 44 SOLD_OUT, with batching on (the default) and off.
func TestBatchStoreReserveRace(t *testing.T) {
	t.Parallel()
	const quantity, buyers = 20, 64
	for _, tc := range []struct {
		name string
		opts []stock.Option
	}{
		{"batched", nil},
		{"unbatched", []stock.Option{stock.Batch(0, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, quantity, 1)
			f.store = stock.New(f.rdb, tc.opts...)

			start := make(chan struct{})
			results := make([]stock.Reservation, buyers)
			errs := make([]error, buyers)
			var wg sync.WaitGroup
			for i := range buyers {
				wg.Go(func() {
					req := f.request("user-"+strconv.Itoa(i), "key")
					<-start
					results[i], errs[i] = f.store.Reserve(f.ctx, req)
				})
			}
			close(start)
			wg.Wait()

			var reserved, soldOut int
			for i, r := range results {
				if errs[i] != nil {
					t.Fatalf("buyer %d: %v", i, errs[i])
				}
				switch {
				case r.Outcome == outcome.Reserved && !r.Replay:
					reserved++
				case r.Outcome == outcome.SoldOut && !r.Replay:
					soldOut++
				default:
					t.Fatalf("buyer %d: unexpected answer %+v", i, r)
				}
			}
			if reserved != quantity || soldOut != buyers-quantity {
				t.Errorf("%d RESERVED and %d SOLD_OUT, want %d and %d", reserved, soldOut, quantity, buyers-quantity)
			}
			if s := f.stock(); s != 0 {
				t.Errorf("stock = %d, want 0", s)
			}
			f.checkInvariant("the race")
		})
	}
}
