package orders_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// TestPlaceBatchReadsFewRowsWhateverThePlan: place_orders must not read every live order for each
// order it decides, whichever index PostgreSQL picks for the per-user check. The trap, as a
// rehearsed sale leaves it: an index of live slots bloated by orders that expired (its pages stay),
// and statistics taken when hardly any order was live, so that PostgreSQL reads the live slots
// through the index of the item's orders (or of every live order's status) instead. Each order's
// check in migration 00012 then read every live order of the item: quadratic, 1,500,000 index
// entries over 2,000 orders, and a 50,000 -> 10,000 burst's consumer 5-7 s behind
// (docs/benchmarks.md, the twelfth part).
func TestPlaceBatchReadsFewRowsWhateverThePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.Postgres(t)
	if _, err := orders.Migrate(ctx, dbURL); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend, whose statistics are flushed before they are read
	s, err := orders.OpenConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	perSale := testSale("p", sale.Item{ID: "hot", Quantity: 100000})
	perSale.PerSaleLimit = 1
	for _, sl := range []sale.Sale{testSale("old", sale.Item{ID: "x", Quantity: 100000}), testSale("s", sale.Item{ID: "hot", Quantity: 100000}), perSale} {
		if err := s.SaveSale(ctx, sl); err != nil {
			t.Fatalf("save sale: %v", err)
		}
	}
	pool := s.Pool()
	for _, q := range []string{
		// A rehearsal's 30,000 orders, all expired: the live-slot index keeps their pages.
		`INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at)
		 SELECT gen_random_uuid(), 'old', 'x', 'r-' || g, 0, 0, 'PENDING', now(), now() + interval '10 minutes'
		   FROM generate_series(1, 30000) g`,
		`UPDATE orders SET status = 'EXPIRED' WHERE sale_id = 'old'`,
		`VACUUM orders`,
		// A few live ones when the statistics are taken.
		`INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at)
		 SELECT gen_random_uuid(), 'old', 'x', 'l-' || g, 0, 0, 'PENDING', now(), now() + interval '10 minutes'
		   FROM generate_series(1, 30) g`,
		`ANALYZE orders`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", strings.Fields(q)[0], err)
		}
	}
	rows, err := pool.Query(ctx, `EXPLAIN SELECT 1 FROM orders WHERE sale_id = 's' AND item_id = 'hot' AND user_id = 'u' AND slot = 0 AND status IN ('PENDING', 'PAID')`)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "orders_live_per_user_slot") {
		t.Fatalf("the set-up no longer leads PostgreSQL past the live-slot index, so this test proves nothing; its plan:\n%s", plan)
	}
	t.Logf("the per-user check's plan in the trap:\n%s", plan)

	read := func() int64 {
		var n int64
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatalf("flush statistics: %v", err)
		}
		if err := pool.QueryRow(ctx, `SELECT t.seq_tup_read + coalesce((SELECT sum(i.idx_tup_read) FROM pg_stat_user_indexes i WHERE i.relid = t.relid), 0)
			FROM pg_stat_user_tables t WHERE t.relname = 'orders'`).Scan(&n); err != nil {
			t.Fatalf("read statistics: %v", err)
		}
		return n
	}
	for _, saleID := range []string{"s", "p"} {
		before, start := read(), time.Now()
		const placed = 2000
		for b := 0; b < placed/500; b++ {
			batch := make([]orders.Placement, 500)
			for i := range batch {
				batch[i] = placement(saleID, "hot", userN(b*500+i), 0)
				if saleID == "p" {
					batch[i].SaleSlot = new(0)
				}
			}
			mustPlace(t, s, batch, orders.Placed)
		}
		got := read() - before
		t.Logf("sale %s: rows and index entries read placing %d orders: %d (in %s)", saleID, placed, got, time.Since(start).Round(time.Millisecond))
		if got > 50*placed {
			t.Errorf("sale %s: placing %d orders read %d rows and index entries of orders, over %d an order: each order's check reads the live orders", saleID, placed, got, got/placed)
		}
	}
}
