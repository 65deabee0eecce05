package orders_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/migrations"
)

// TestPlaceBatchAnswersAs00012: place_orders as migration 00013 left it (the per-user limit decided
// by the insert's arbiter index, a run decided again order by order when a slot was taken) answers
// every batch as 00012's place_orders did and leaves the same orders and sold counts. Two databases,
// one given 00012's body back, take the same random batches: redeliveries within and across
// batches, buyers whose slots are taken by live orders of earlier batches, per-sale slots, items
// running out, keys present and absent.
func TestPlaceBatchAnswersAs00012(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old, now := openStore(t), openStore(t)
	body, err := fs.ReadFile(migrations.FS, "00012_place_orders.sql")
	if err != nil {
		t.Fatal(err)
	}
	up := string(body)
	up = up[strings.Index(up, "-- +goose StatementBegin")+len("-- +goose StatementBegin") : strings.Index(up, "-- +goose StatementEnd")]
	if _, err := old.Pool().Exec(ctx, strings.Replace(up, "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)); err != nil {
		t.Fatalf("give 00012's place_orders back: %v", err)
	}
	rng := rand.New(rand.NewPCG(37, 13))
	for trial := range 40 {
		id := fmt.Sprintf("t%d", trial)
		sl := testSale(id, sale.Item{ID: "a", Quantity: int64(3 + rng.IntN(12))}, sale.Item{ID: "b", Quantity: int64(3 + rng.IntN(12))})
		sl.PerUserLimit = 3
		if trial%2 == 1 {
			sl.PerSaleLimit = 2
		}
		for _, s := range []*orders.Store{old, now} {
			if err := s.SaveSale(ctx, sl); err != nil {
				t.Fatalf("save sale: %v", err)
			}
		}
		var sent []orders.Placement
		for batch := range 4 {
			ps := make([]orders.Placement, 10+rng.IntN(30))
			for i := range ps {
				if len(sent) > 0 && rng.IntN(8) == 0 { // a redelivery, its key maybe given only now
					ps[i] = sent[rng.IntN(len(sent))]
					if rng.IntN(2) == 0 {
						ps[i].IdemKey = fmt.Sprintf("k%d-%d-%d", trial, batch, i)
					}
					continue
				}
				p := placement(id, []string{"a", "b"}[rng.IntN(2)], fmt.Sprintf("u%d", rng.IntN(6)), rng.IntN(3))
				if rng.IntN(3) > 0 {
					p.IdemKey = fmt.Sprintf("k%d-%d-%d", trial, batch, i)
				}
				if sl.PerSaleLimit > 0 {
					p.SaleSlot = new(rng.IntN(sl.PerSaleLimit))
				}
				ps[i] = p
			}
			if rng.IntN(2) == 0 && len(ps) > 1 { // the same order twice in one call, its key given second
				ps[0].IdemKey = ""
				ps[len(ps)-1] = ps[0]
				ps[len(ps)-1].IdemKey = fmt.Sprintf("k%d-%d-again", trial, batch)
			}
			sent = append(sent, ps...)
			want, err := old.PlaceBatch(ctx, ps)
			if err != nil {
				t.Fatalf("trial %d batch %d, 00012: %v", trial, batch, err)
			}
			got, err := now.PlaceBatch(ctx, ps)
			if err != nil {
				t.Fatalf("trial %d batch %d: %v", trial, batch, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d batch %d answered\n%v\n00012 answered\n%v", trial, batch, got, want)
			}
		}
		if got, want := tableOf(t, now, id), tableOf(t, old, id); got != want {
			t.Fatalf("trial %d left\n%s\n00012 left\n%s", trial, got, want)
		}
	}
}

// tableOf is a sale's orders and sold counts, as text to compare.
func tableOf(tb testing.TB, s *orders.Store, saleID string) string {
	tb.Helper()
	var b strings.Builder
	rows, err := s.Pool().Query(context.Background(), `
		SELECT id, item_id, user_id, slot, coalesce(sale_slot, -1), status, coalesce(idem_key, '-') FROM orders WHERE sale_id = $1
		UNION ALL
		SELECT NULL, id, 'sold', sold, -1, '', '' FROM sale_items WHERE sale_id = $1
		ORDER BY 1, 2`, saleID)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                      *uuid.UUID
			item, user, status, key string
			slot, saleSlot          int
		)
		if err := rows.Scan(&id, &item, &user, &slot, &saleSlot, &status, &key); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintln(&b, id, item, user, slot, saleSlot, status, key)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// TestPlaceBatchDecidesARunAgainWhenASlotIsTaken: a run whose insert finds one buyer's slot taken
// by a live order of the table is decided again, order by order: that buyer is refused for the
// limit without taking a unit (the last unit goes to the order after it), and an order given twice,
// its key only the second time, keeps that key.
func TestPlaceBatchDecidesARunAgainWhenASlotIsTaken(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "a", Quantity: 3})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	mustPlace(t, s, []orders.Placement{placement("s", "a", "taken", 0)}, orders.Placed)
	twice := placement("s", "a", "u1", 0)
	again := twice
	again.IdemKey = "key-again"
	placeWanting(t, s, []orders.Placement{twice, placement("s", "a", "taken", 0), placement("s", "a", "u2", 0), again, placement("s", "a", "u3", 0)},
		"placed ", "refused limit", "placed ", "duplicate ", "refused oversold")
	if c := countsOf(t, s, "s")["a"]; c.Sold != 3 || c.Pending != 3 {
		t.Fatalf("counts: got %+v, want 3 sold and pending", c)
	}
	if key := idemKeyOf(t, s, twice.OrderID); key != "key-again" {
		t.Fatalf("the order given twice kept key %q, want key-again", key)
	}

	// The order given twice seemed oversold until the run was decided again: its second copy meets
	// it placed only then, and still gives it its key.
	if err := s.SaveSale(ctx, testSale("t", sale.Item{ID: "a", Quantity: 2})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	mustPlace(t, s, []orders.Placement{placement("t", "a", "taken", 0)}, orders.Placed)
	// The first order above took one of the two units: one is left for the run.
	late := placement("t", "a", "u1", 0)
	lateAgain := late
	lateAgain.IdemKey = "key-late"
	placeWanting(t, s, []orders.Placement{placement("t", "a", "taken", 0), late, lateAgain}, "refused limit", "placed ", "duplicate ")
	if key := idemKeyOf(t, s, late.OrderID); key != "key-late" {
		t.Fatalf("the order given twice kept key %q, want key-late", key)
	}
}

// placeWanting places batch and fails unless each placement is answered as want says ("result
// reason", as PlaceResult prints them).
func placeWanting(t *testing.T, s *orders.Store, batch []orders.Placement, want ...string) {
	t.Helper()
	res, err := s.PlaceBatch(context.Background(), batch)
	if err != nil {
		t.Fatalf("place batch: %v", err)
	}
	for i, r := range res {
		if got := r.Result.String() + " " + r.Reason; got != want[i] {
			t.Errorf("placement %d (%s): got %q, want %q", i, batch[i].UserID, got, want[i])
		}
	}
}
