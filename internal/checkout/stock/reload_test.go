package stock_test

import (
	"testing"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// TestReload: where Preload keeps a counter it finds, Reload sets every shard's counter to its share
// of what is left and drops the shard's holds, orders and buyer records, whatever was there.
func TestReload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, 1, sharded(2))
	buyer := userAt("buyer", 2, 1)
	f.mustReserve(buyer, "k")
	// A counter written back by a release racing a wipe: Preload keeps it, Reload must not.
	if err := f.rdb.Set(f.ctx, f.shardKeys(0).Stock(), 99, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Preload(f.ctx, f.sale, map[string]int64{f.item: 7}); err != nil {
		t.Fatalf("preload: %v", err)
	}
	if got := f.shardStocks(); got[0] != 99 {
		t.Fatalf("preload changed a live counter: stocks %v", got)
	}

	if err := f.store.Reload(f.ctx, f.sale, map[string]int64{f.item: 7}); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := f.shardStocks(); got[0] != 4 || got[1] != 3 {
		t.Fatalf("stocks %v after reloading 7 units over 2 shards, want [4 3]", got)
	}
	for k := range 2 {
		rec, err := f.store.Inspect(f.ctx, f.sale.ID, f.item, k, f.sale.Items[0].ShardCount())
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Holds)+len(rec.Orders)+len(rec.Buyers) != 0 {
			t.Fatalf("shard %d kept state through the reload: %+v", k, rec)
		}
	}
	// The settings are back too: the sale is open, and the buyer's old slot is free again.
	if r := f.reserve(buyer, "k2"); r.Outcome != outcome.Reserved {
		t.Fatalf("reserve after the reload = %+v, want RESERVED", r)
	}
	if rec, err := f.store.Inspect(f.ctx, f.sale.ID, f.item, 1, f.sale.Items[0].ShardCount()); err != nil || len(rec.Holds) != 1 {
		t.Fatalf("the new hold: %+v %v", rec, err)
	}
}
