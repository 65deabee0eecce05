// Package verify holds what a sale must never break, each rule written once, and the one wait
// until a sale has settled (docs/design.md, "Invariants"). Every command that judges a sale —
// blast --check-state, the demo, the drill, the game day, reconcile — reads each item's counters
// in its own way, fills an Item, and asks Check which rules it breaks; what a command adds on
// top (a repair, a verdict, an exit status) is its own.
package verify

import (
	"fmt"
	"slices"
)

// The invariants, as findings name them.
const (
	// Oversold: more units given out than the item has (live orders, the sold counter or the
	// RESERVED answers over its quantity).
	Oversold = "oversold"
	// SoldCounter: PostgreSQL's sold counter is not its count of live orders.
	SoldCounter = "sold counter"
	// PerUser: a buyer holds more live orders of the item than the per-user limit.
	PerUser = "per-user limit"
	// Units: Redis's stock and the units taken from it (holds and paid orders, or the live
	// orders where the target keeps no holds) do not add up to the quantity: units were lost
	// (the sale sells fewer than it has) or doubled (it would sell some twice).
	Units = "units lost or doubled"
	// Holds: Redis's holds are not PostgreSQL's pending orders.
	Holds = "holds"
	// NegativeShard: a stock counter below zero.
	NegativeShard = "negative shard"
	// MissingStock: a stock counter that does not exist (an item never preheated is not sold out).
	MissingStock = "missing stock key"
	// Durable: the RESERVED answers are not the live orders PostgreSQL has for them.
	Durable = "durability"
)

// Count is a number a check may not have read: the zero Count is unknown, and a rule that
// needs it is not applied.
type Count struct {
	N     int64
	Known bool
}

// Of is a count that was read.
func Of(n int64) Count { return Count{N: n, Known: true} }

// Shard is one stock counter of an item.
type Shard struct {
	// Index is the shard's number.
	Index int
	// Name says which counter it is in a message: "shard 2 stock" or its Redis key.
	Name  string
	Stock int64
}

// Item is one item as the stores and the buyers' answers show it, read after the sale settled.
type Item struct {
	ID       string
	Quantity int64

	// Redis: the stock summed over the item's counters, each counter, and the units held for
	// pending orders (unknown where the target keeps no holds).
	Stock  int64
	Shards []Shard
	// Missing lists the stock counters that do not exist.
	Missing []Shard
	Holds   Count

	// PostgreSQL: the sold counter, the live (pending or paid) orders, the paid ones, and the
	// most live orders one buyer holds, with the limit they are held to (0: not checked).
	Sold           Count
	Live           int64
	Paid           Count
	MaxLivePerUser Count
	PerUserLimit   int

	// Reserved counts the distinct RESERVED answers given for the item on top of LiveBefore
	// live orders (unknown where no answers are checked).
	Reserved   Count
	LiveBefore int64
}

// Problem is one broken rule of one item: the rule, then what breaks it.
type Problem struct {
	Item      string `json:"item"`
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
	// Shard is the counter a stock rule is about.
	Shard int `json:"shard,omitempty"`
	// Delta is what the units rule found missing (positive: lost) or doubled (negative).
	Delta int64 `json:"delta,omitempty"`
}

// Oversell reports whether the problem is units given out beyond what there is: an oversold
// item, a stock counter below zero, or a buyer over the per-user limit. The other rules are
// the stores disagreeing about units that exist.
func (p Problem) Oversell() bool {
	return p.Invariant == Oversold || p.Invariant == NegativeShard || p.Invariant == PerUser
}

// String names the rule, then what breaks it: "oversold: 11 live orders for 10 units".
func (p Problem) String() string { return p.Invariant + ": " + p.Detail }

// Check returns every rule the item breaks, in a fixed order; none means it is consistent.
func Check(it Item) []Problem {
	var out []Problem
	add := func(invariant, format string, a ...any) *Problem {
		out = append(out, Problem{Item: it.ID, Invariant: invariant, Detail: fmt.Sprintf(format, a...)})
		return &out[len(out)-1]
	}
	switch {
	case it.Live > it.Quantity:
		add(Oversold, "%d live orders for %d units", it.Live, it.Quantity)
	case it.Sold.Known && it.Sold.N > it.Quantity:
		add(Oversold, "the sold counter %d is over the %d units", it.Sold.N, it.Quantity)
	case it.Reserved.Known && it.LiveBefore+it.Reserved.N > it.Quantity:
		add(Oversold, "%d buyers told RESERVED on top of %d live orders, for %d units", it.Reserved.N, it.LiveBefore, it.Quantity)
	}
	if it.Sold.Known && it.Sold.N != it.Live {
		add(SoldCounter, "%d, live orders %d", it.Sold.N, it.Live)
	}
	if it.MaxLivePerUser.Known && it.PerUserLimit > 0 && it.MaxLivePerUser.N > int64(it.PerUserLimit) {
		add(PerUser, "a buyer holds %d live orders, limit %d", it.MaxLivePerUser.N, it.PerUserLimit)
	}
	if len(it.Missing) == 0 {
		if delta, detail := units(it); delta != 0 {
			add(Units, "%s", detail).Delta = delta
		}
	}
	if it.Holds.Known && it.Paid.Known && it.Holds.N != it.Live-it.Paid.N {
		add(Holds, "redis has %d live holds, PostgreSQL %d pending orders", it.Holds.N, it.Live-it.Paid.N)
	}
	for _, sh := range it.Shards {
		if sh.Stock < 0 {
			add(NegativeShard, "%s is %d", sh.Name, sh.Stock).Shard = sh.Index
		}
	}
	if len(it.Shards) == 0 && it.Stock < 0 {
		add(NegativeShard, "the redis stock is %d", it.Stock)
	}
	for _, m := range it.Missing {
		add(MissingStock, "%s does not exist (was the item preheated? did Redis lose it?)", m.Name).Shard = m.Index
	}
	if it.Reserved.Known {
		switch want := it.LiveBefore + it.Reserved.N; {
		case it.Live < want:
			add(Durable, "%d buyers told RESERVED but PostgreSQL has %d new live orders", it.Reserved.N, it.Live-it.LiveBefore)
		case it.Live > want:
			add(Durable, "PostgreSQL has %d new live orders for %d RESERVED answers", it.Live-it.LiveBefore, it.Reserved.N)
		}
	}
	return out
}

// Expected is what Redis's stock of the item must hold by the units equation, and the terms it is
// made of: where Redis keeps holds, quantity − holds − paid (stock + holds = quantity − paid);
// elsewhere quantity − live orders. Every command that holds a counter against the sale (preflight,
// the war room's drift, reconcile) asks this one rule.
func Expected(it Item) (want int64, terms string) {
	if it.Holds.Known && it.Paid.Known {
		return it.Quantity - it.Holds.N - it.Paid.N, fmt.Sprintf("quantity %d − holds %d − paid %d", it.Quantity, it.Holds.N, it.Paid.N)
	}
	return it.Quantity - it.Live, fmt.Sprintf("quantity %d − live orders %d", it.Quantity, it.Live)
}

// Delta is what the units equation finds off: the expected stock minus Redis's; > 0 units lost
// (the sale sells fewer than it has), < 0 doubled (it would sell some twice).
func Delta(it Item) int64 {
	want, _ := Expected(it)
	return want - it.Stock
}

// GaveOutTooMany reports whether the item gave out more units than it has: more live orders than
// its quantity, or a stock counter below zero. A unit count that is off on such an item is not
// repaired by moving a counter (the units went out twice); it is left to a person.
func GaveOutTooMany(it Item) bool {
	return it.Live > it.Quantity || it.Stock < 0 && len(it.Shards) == 0 ||
		slices.ContainsFunc(it.Shards, func(sh Shard) bool { return sh.Stock < 0 })
}

// units is the unit count: Redis's stock plus the units taken from it must be the quantity
// (Expected). delta > 0: units lost, < 0: doubled.
func units(it Item) (delta int64, detail string) {
	delta = Delta(it)
	if delta == 0 {
		return 0, ""
	}
	var parts string
	if it.Holds.Known && it.Paid.Known {
		parts = fmt.Sprintf("redis stock %d + holds %d + paid %d", it.Stock, it.Holds.N, it.Paid.N)
	} else {
		parts = fmt.Sprintf("redis stock %d + live orders %d", it.Stock, it.Live)
	}
	return delta, fmt.Sprintf("%s = %d, quantity %d: %s", parts, it.Quantity-delta, it.Quantity, UnitsWord(delta))
}

// UnitsWord says what a units delta means for the sale.
func UnitsWord(delta int64) string {
	if delta > 0 {
		return fmt.Sprintf("%d unit(s) lost (Redis sells %d fewer)", delta, delta)
	}
	return fmt.Sprintf("%d unit(s) doubled (Redis would sell %d more)", -delta, -delta)
}

// Has reports whether the problems break the invariant.
func Has(ps []Problem, invariant string) bool {
	for _, p := range ps {
		if p.Invariant == invariant {
			return true
		}
	}
	return false
}

// Strings returns each problem as String says it, prefixed with its item when withItem is set.
func Strings(ps []Problem, withItem bool) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
		if withItem {
			out[i] = p.Item + ": " + out[i]
		}
	}
	return out
}
