package verify

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// settled is a consistent item of the bundled server: 10 units, 3 held, 2 paid, 5 left, 5 live
// orders that 5 RESERVED answers stand for.
func settled() Item {
	return Item{ID: "hot", Quantity: 10, Stock: 5, Shards: []Shard{{Name: "shard 0 stock", Stock: 3}, {Name: "shard 1 stock", Stock: 2}},
		Holds: Of(3), Sold: Of(5), Live: 5, Paid: Of(2), MaxLivePerUser: Of(1), PerUserLimit: 1, Reserved: Of(5)}
}

// TestCheckNamesEachPlantedFault plants one fault per invariant and expects exactly that one.
func TestCheckNamesEachPlantedFault(t *testing.T) {
	if ps := Check(settled()); len(ps) != 0 {
		t.Fatalf("a consistent item breaks %v", ps)
	}
	for _, tc := range []struct {
		want  string
		plant func(*Item)
	}{
		{Oversold, func(it *Item) { it.Quantity, it.Stock = 4, -1; it.Shards = nil; it.Holds = Of(3) }},
		{SoldCounter, func(it *Item) { it.Sold = Of(6) }},
		{PerUser, func(it *Item) { it.MaxLivePerUser = Of(2) }},
		{Units, func(it *Item) { it.Stock, it.Shards = 6, nil }},
		{Holds, func(it *Item) { it.Holds, it.Stock = Of(2), 6; it.Shards = nil }},
		{NegativeShard, func(it *Item) { it.Shards[0].Stock, it.Shards[1].Stock = 6, -1 }},
		{MissingStock, func(it *Item) { it.Missing = []Shard{{Name: "k"}} }},
		{Durable, func(it *Item) { it.Reserved = Of(6); it.Quantity, it.Stock = 11, 6; it.Shards = nil }},
	} {
		it := settled()
		tc.plant(&it)
		ps := Check(it)
		var got []string
		for _, p := range ps {
			got = append(got, p.Invariant)
		}
		if tc.want == Oversold {
			// 5 live orders of 4 units: the unit count is off too, and says so.
			got = slices.DeleteFunc(got, func(s string) bool { return s == Units || s == NegativeShard })
		}
		if !slices.Equal(got, []string{tc.want}) {
			t.Errorf("planted %s: got %v (%v)", tc.want, got, ps)
		}
	}
}

// TestUnitsWithoutHolds counts a target that keeps no holds by its live orders, and says which
// way the units went.
func TestUnitsWithoutHolds(t *testing.T) {
	it := Item{ID: "a", Quantity: 10, Stock: 3, Sold: Of(5), Live: 5}
	ps := Check(it)
	if len(ps) != 1 || ps[0].Invariant != Units || ps[0].Delta != 2 ||
		ps[0].Detail != "redis stock 3 + live orders 5 = 8, quantity 10: 2 unit(s) lost (Redis sells 2 fewer)" ||
		ps[0].String() != "units lost or doubled: "+ps[0].Detail {
		t.Fatalf("lost: %+v", ps)
	}
	it.Stock = 7
	if ps := Check(it); len(ps) != 1 || ps[0].Delta != -2 || ps[0].Detail != "redis stock 7 + live orders 5 = 12, quantity 10: 2 unit(s) doubled (Redis would sell 2 more)" {
		t.Fatalf("doubled: %+v", ps)
	}
	it.Missing = []Shard{{Name: "k"}}
	if ps := Check(it); len(ps) != 1 || ps[0].Invariant != MissingStock {
		t.Fatalf("a missing counter is not a unit count: %+v", ps)
	}
}

// TestFromState reads holds only where the profile declares them, and paid only where it can.
func TestFromState(t *testing.T) {
	st := profile.ItemState{Item: "a", ItemRow: profile.ItemRow{Quantity: 10, Sold: 4}, Live: 4, Paid: 1, HasPaid: true,
		Inventory: profile.Inventory{Stock: 6, Holds: 3, Shards: []profile.ShardInventory{
			{Keys: profile.ShardKeys{Stock: "s0", Holds: "h0"}, Stock: 6, StockSet: true, Holds: 3}}}}
	it := FromState(st)
	if !it.Holds.Known || it.Holds.N != 3 || !it.Paid.Known || it.Paid.N != 1 || len(it.Shards) != 1 || len(Check(it)) != 0 {
		t.Fatalf("bundled: %+v %v", it, Check(it))
	}
	st.Inventory.Shards[0].Keys.Holds, st.HasPaid = "", false
	st.Inventory.Shards = append(st.Inventory.Shards, profile.ShardInventory{Keys: profile.ShardKeys{Shard: 1, Stock: "s1"}})
	it = FromState(st)
	if it.Holds.Known || it.Paid.Known || len(it.Shards) != 1 || len(it.Missing) != 1 || it.Missing[0].Name != "s1" {
		t.Fatalf("foreign: %+v", it)
	}
}

func TestSettle(t *testing.T) {
	n := 0
	waiting, err := Settle(context.Background(), time.Minute, time.Millisecond, func(context.Context) ([]string, error) {
		if n++; n < 3 {
			return []string{"lag"}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) != 0 || n != 3 {
		t.Fatalf("settles on the third read: %v %v %d", waiting, err, n)
	}
	waiting, err = Settle(context.Background(), 5*time.Millisecond, time.Millisecond, func(context.Context) ([]string, error) {
		return []string{"lag"}, nil
	})
	if err != nil || !slices.Equal(waiting, []string{"lag"}) {
		t.Fatalf("past the bound: want what it still waits for: %v %v", waiting, err)
	}
	boom := errors.New("boom")
	if _, err := Settle(context.Background(), time.Minute, 0, func(context.Context) ([]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed read stops the wait: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Settle(ctx, time.Minute, time.Hour, func(context.Context) ([]string, error) { return []string{"x"}, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}

// TestOversell splits what was given out beyond the stock from what the stores disagree about.
func TestOversell(t *testing.T) {
	for inv, want := range map[string]bool{Oversold: true, NegativeShard: true, PerUser: true,
		SoldCounter: false, Units: false, Holds: false, MissingStock: false, Durable: false} {
		if got := (Problem{Invariant: inv}).Oversell(); got != want {
			t.Errorf("%s: Oversell() = %v", inv, got)
		}
	}
}

// TestExpected: the units equation, as preflight, the war room and reconcile ask it.
func TestExpected(t *testing.T) {
	it := settled()
	if want, terms := Expected(it); want != 5 || terms != "quantity 10 − holds 3 − paid 2" {
		t.Errorf("with holds: %d %q, want 5 and quantity − holds − paid", want, terms)
	}
	it.Stock = 7 // two units doubled
	if d := Delta(it); d != -2 {
		t.Errorf("stock 7 for 5 expected: delta %d, want -2", d)
	}
	live := Item{Quantity: 10, Stock: 4, Live: 5}
	if want, terms := Expected(live); want != 5 || terms != "quantity 10 − live orders 5" || Delta(live) != 1 {
		t.Errorf("without holds: %d %q delta %d, want 5, quantity − live orders, 1 lost", want, terms, Delta(live))
	}
}

// TestGaveOutTooMany: more live orders than units, or a counter below zero.
func TestGaveOutTooMany(t *testing.T) {
	if GaveOutTooMany(settled()) {
		t.Error("a consistent item gave out too many")
	}
	for name, plant := range map[string]func(*Item){
		"live over quantity":  func(it *Item) { it.Live = 11 },
		"a negative shard":    func(it *Item) { it.Shards[1].Stock = -1 },
		"negative, unsharded": func(it *Item) { it.Shards, it.Stock = nil, -1 },
	} {
		it := settled()
		it.Shards = slices.Clone(it.Shards)
		plant(&it)
		if !GaveOutTooMany(it) {
			t.Errorf("%s: not seen", name)
		}
	}
}
