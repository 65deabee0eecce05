package reconcile

import (
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/target/profile"
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

// TestOnlyNarrowsTheSale keeps the given items in their order and names one the sale lacks.
func TestOnlyNarrowsTheSale(t *testing.T) {
	sl := sale.Sale{ID: "s", Items: []sale.Item{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	got, err := only(sl, []string{"c", "a"})
	if err != nil || len(got.Items) != 2 || got.Items[0].ID != "c" || got.Items[1].ID != "a" || len(sl.Items) != 3 {
		t.Fatalf("only c, a: %+v %v", got.Items, err)
	}
	if got, err := only(sl, nil); err != nil || len(got.Items) != 3 {
		t.Fatalf("no items given: %+v %v", got.Items, err)
	}
	if _, err := only(sl, []string{"x"}); err == nil || !strings.Contains(err.Error(), `no item "x"`) {
		t.Fatalf("an unknown item: %v", err)
	}
}

// TestValidateRebuildIsTheBundledServers: rebuilding Redis needs fsctl serve's scripts.
func TestValidateRebuildIsTheBundledServers(t *testing.T) {
	foreign := *profile.Default()
	foreign.Deep, foreign.Name = "", "shop"
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{RebuildRedis: true}, true},
		{Config{RebuildRedis: true, Profile: profile.Default()}, true},
		{Config{RebuildRedis: true, Profile: &foreign}, false},
		{Config{Profile: &foreign, Items: []string{"a"}}, true},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v", tc.cfg, err)
		}
	}
}
