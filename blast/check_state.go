package blast

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// CheckState checks a target's Redis and PostgreSQL against what its buyers were told, through
// what the target's profile declares (the bundled server's included): every reservation a buyer
// was told about is an order in PostgreSQL (live, or cancelled or expired since), and each item
// keeps package verify's rules. It waits up to wait for the sale to settle (the consumer writes
// orders after the answers) and judges the last read. The items are those of sale that the
// records or limits name.
func CheckState(ctx context.Context, t *profile.Target, sale string, recs []loadgen.Record, limits map[loadgen.Target]loadgen.ItemLimit, wait time.Duration) ([]finding.Finding, error) {
	told := reservations(sale, recs)
	items := saleItems(sale, recs, limits)
	var lost, oversell, drift []string
	_, err := verify.Settle(ctx, wait, 0, func(ctx context.Context) ([]string, error) {
		lost, oversell, drift = nil, nil, nil
		live, err := liveOrders(ctx, t, sale, told)
		if err != nil {
			return nil, err
		}
		for _, b := range told.buyers() {
			g := told[b]
			if live.orders[b] >= g.n() {
				continue
			}
			// Fewer live orders than reservations: the others may have ended since (a paid order
			// is live, a cancelled or expired one is not), so judge by the buyer's orders whatever
			// their status.
			orders, read := live.all[b]
			if !read {
				if orders, err = live.ordersOf(ctx, t, sale, b); err != nil {
					return nil, err
				}
			}
			if missing := g.missing(orders); missing > 0 {
				lost = append(lost, fmt.Sprintf("%s: %s was told RESERVED %d time(s) but %d of those orders are not in PostgreSQL after %s",
					loadgen.Target{SaleID: sale, ItemID: b.item}, b.user, g.n(), missing, wait))
			}
		}
		for _, item := range items {
			st, err := t.State(ctx, sale, item)
			if err != nil {
				return nil, fmt.Errorf("read item %s: %w", item, err)
			}
			it := verify.FromState(st)
			if lim, ok := limits[loadgen.Target{SaleID: sale, ItemID: item}]; ok {
				it.MaxLivePerUser, it.PerUserLimit = live.most(item), lim.PerUser
			}
			for _, p := range verify.Check(it) {
				if p.Oversell() {
					oversell = append(oversell, item+": "+p.String())
				} else {
					drift = append(drift, item+": "+p.String())
				}
			}
		}
		return append(append(lost[:len(lost):len(lost)], oversell...), drift...), nil
	})
	if err != nil {
		return nil, err
	}
	return []finding.Finding{
		finding.Verdict("every RESERVED order reached PostgreSQL", lost),
		finding.Verdict("no oversell (PostgreSQL)", oversell),
		finding.Verdict("Redis agrees with PostgreSQL", drift),
	}, nil
}

// buyerItem is one buyer of one item.
type buyerItem struct{ user, item string }

// told holds the distinct reservations each buyer was told of, per item.
type told map[buyerItem]*grants

// grants are one buyer's reservations of one item: the order ids it was told, and the keys of
// those it was told without one (retries and replays of one key are one reservation).
type grants struct{ ids, keys map[string]bool }

func (g *grants) n() int64 { return int64(len(g.ids) + len(g.keys)) }

// missing counts the reservations that are not among the buyer's orders: each told order id
// that is not one of them, and the keyed reservations beyond the orders left over.
func (g *grants) missing(orders []profile.Order) int64 {
	var missing, matched int64
	for _, o := range orders {
		if g.ids[o.ID] {
			matched++
		}
	}
	missing = int64(len(g.ids)) - matched
	if spare := int64(len(orders)) - matched; int64(len(g.keys)) > spare {
		missing += int64(len(g.keys)) - spare
	}
	return missing
}

func reservations(sale string, recs []loadgen.Record) told {
	out := told{}
	for _, r := range recs {
		if r.Outcome != outcome.Reserved || r.Target.SaleID != sale {
			continue
		}
		k := buyerItem{r.User, r.Target.ItemID}
		g := out[k]
		if g == nil {
			g = &grants{ids: map[string]bool{}, keys: map[string]bool{}}
			out[k] = g
		}
		if r.OrderID != "" {
			g.ids[r.OrderID] = true
		} else {
			g.keys[r.Key] = true
		}
	}
	return out
}

// buyers are the told buyers in a stable order.
func (t told) buyers() []buyerItem {
	out := make([]buyerItem, 0, len(t))
	for b := range t {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b buyerItem) int { return cmp.Or(cmp.Compare(a.item, b.item), cmp.Compare(a.user, b.user)) })
	return out
}

// saleItems are the items of sale that the records or the limits name, sorted.
func saleItems(sale string, recs []loadgen.Record, limits map[loadgen.Target]loadgen.ItemLimit) []string {
	var items []string
	add := func(tg loadgen.Target) {
		if tg.SaleID == sale && !slices.Contains(items, tg.ItemID) {
			items = append(items, tg.ItemID)
		}
	}
	for _, r := range recs {
		add(r.Target)
	}
	for tg := range limits {
		add(tg)
	}
	slices.Sort(items)
	return items
}

// live counts each buyer's live orders; every names the items whose every buyer was read
// (sql.liveBuyers), for which the most live orders one buyer holds is known, and all keeps the
// orders in every status of the buyers read one by one. byItem keeps each item's orders by user
// once read with sql.itemOrders.
type live struct {
	orders map[buyerItem]int64
	every  map[string]bool
	all    map[buyerItem][]profile.Order
	byItem map[string]map[string][]profile.Order
}

// ordersOf is a buyer's orders of an item in every status: from the item's orders, read in one
// query the first time (sql.itemOrders), or the buyer's own (sql.userOrders).
func (l *live) ordersOf(ctx context.Context, t *profile.Target, sale string, b buyerItem) ([]profile.Order, error) {
	if users, ok := l.byItem[b.item]; ok {
		return users[b.user], nil
	}
	users, ok, err := t.DB.ItemOrders(ctx, sale, b.item)
	if err != nil {
		return nil, err
	}
	if !ok {
		return t.DB.UserOrders(ctx, sale, b.item, b.user)
	}
	if l.byItem == nil {
		l.byItem = map[string]map[string][]profile.Order{}
	}
	l.byItem[b.item] = users
	return users[b.user], nil
}

// liveOrders reads the live orders of every told buyer: each item's live buyers in one query when
// the profile declares sql.liveBuyers (one query for ten thousand buyers), else each buyer's own
// orders (sql.userOrders).
func liveOrders(ctx context.Context, t *profile.Target, sale string, told told) (live, error) {
	out := live{orders: map[buyerItem]int64{}, every: map[string]bool{}, all: map[buyerItem][]profile.Order{}}
	for _, b := range told.buyers() {
		if t.P.SQL.LiveBuyers != "" {
			if out.every[b.item] {
				continue
			}
			out.every[b.item] = true
			buyers, _, err := t.DB.LiveBuyers(ctx, sale, b.item)
			if err != nil {
				return live{}, err
			}
			for u, n := range buyers {
				out.orders[buyerItem{u, b.item}] = n
			}
			continue
		}
		orders, err := t.DB.UserOrders(ctx, sale, b.item, b.user)
		if err != nil {
			return live{}, err
		}
		out.all[b] = orders
		for _, o := range orders {
			if t.P.IsLive(o.Status) {
				out.orders[b]++
			}
		}
	}
	return out, nil
}

// most is the most live orders one buyer holds of the item, when every buyer of it was read.
func (l live) most(item string) verify.Count {
	if !l.every[item] {
		return verify.Count{}
	}
	var n int64
	for b, c := range l.orders {
		if b.item == item {
			n = max(n, c)
		}
	}
	return verify.Of(n)
}
