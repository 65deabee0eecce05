package reconcile

import (
	"strings"
	"testing"

	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/stock"
)

// TestCheckFindsEveryViolation feeds check one consistent item and one broken copy per invariant.
func TestCheckFindsEveryViolation(t *testing.T) {
	good := ItemReport{ItemID: "i", Quantity: 10, Stock: 6, Holds: 2, MaxLivePerUser: 1,
		Counts: orders.ItemCounts{ItemID: "i", Quantity: 10, Sold: 4, Pending: 2, Paid: 2},
		Shards: []stock.ShardState{{Shard: 0, Stock: 6, Holds: 2}}}
	if p := check(good, 1); len(p) != 0 {
		t.Fatalf("consistent item reported %v", p)
	}
	for want, mutate := range map[string]func(*ItemReport){
		"oversold":       func(r *ItemReport) { r.Counts.Pending, r.Counts.Sold, r.Holds, r.Stock = 9, 11, 9, -1 },
		"sold counter":   func(r *ItemReport) { r.Counts.Sold = 5 },
		"per-user limit": func(r *ItemReport) { r.MaxLivePerUser = 2 },
		"units lost":     func(r *ItemReport) { r.Stock = 5 },
		"live holds":     func(r *ItemReport) { r.Holds, r.Stock = 3, 5 },
		"negative":       func(r *ItemReport) { r.Shards = append(r.Shards, stock.ShardState{Shard: 1, Stock: -1}) },
	} {
		r := good
		r.Shards = append([]stock.ShardState(nil), good.Shards...)
		mutate(&r)
		p := check(r, 1)
		if !strings.Contains(strings.Join(p, "; "), want) {
			t.Errorf("%s: check reported %v", want, p)
		}
	}
}
