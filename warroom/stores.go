package warroom

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// The items and orders sources of every target, the bundled server included, read what its
// profile declares: its Redis key templates and its SQL. What only fsctl serve keeps (its orders
// by status, the units in transit between an item's shards) is an optional capability, set by Open
// for a deep profile and asked for where it is used.

// itemList is what the items and orders sources share: the item list with each item's quantity
// and shards, read once from the profile's queries, so the Redis panel keeps going when
// PostgreSQL goes down later.
type itemList struct {
	sale string
	// given are the items to watch; empty: every item sql.items returns.
	given []string
	db    *profile.DB

	mu    sync.Mutex
	items []sale.Item
}

// list returns the items with their quantity and shards, reading them on first success.
func (l *itemList) list(ctx context.Context) ([]sale.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.items != nil {
		return l.items, nil
	}
	ids := l.given
	if len(ids) == 0 {
		var err error
		if ids, err = l.db.Items(ctx, l.sale); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("sql.items returned no item for sale %s", l.sale)
		}
	}
	items := make([]sale.Item, 0, len(ids))
	for _, id := range ids {
		row, err := l.db.Item(ctx, l.sale, id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", id, err)
		}
		shards, err := l.db.Shards(ctx, l.sale, id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", id, err)
		}
		items = append(items, sale.Item{ID: id, Quantity: row.Quantity, Shards: shards})
	}
	l.items = items
	return items, nil
}

// redisInventory reads every item's counters with the profile's key templates: the stock left
// summed over shards, the buyers and the holds (0 when the profile has no holds key).
type redisInventory struct {
	items *itemList
	keys  *profile.Stocks
	// transit, when set (fsctl serve), finds the units on their way between an item's shards, which
	// are still on sale.
	transit *stock.Store
}

// Inventory returns every item's stock, buyers and holds; a stock key that does not exist is an
// error (an item never preheated is not sold out).
func (r *redisInventory) Inventory(ctx context.Context) ([]ItemStock, error) {
	items, err := r.items.list(ctx)
	if err != nil {
		return nil, err
	}
	moving, err := r.inTransit(ctx, items)
	if err != nil {
		return nil, err
	}
	out := make([]ItemStock, 0, len(items))
	for _, it := range items {
		inv, err := r.keys.Inventory(ctx, r.items.sale, it.ID, it.Shards)
		if err != nil {
			return nil, err
		}
		if missing := inv.Missing(); len(missing) > 0 {
			return nil, fmt.Errorf("item %s: redis has no %s (is the item preheated?)", it.ID, strings.Join(missing, ", "))
		}
		out = append(out, ItemStock{ID: it.ID, Quantity: it.Quantity, Remaining: inv.Stock + moving[it.ID], Held: inv.Holds,
			Buyers: inv.Buyers, Shards: it.Shards})
	}
	return out, nil
}

// inTransit returns the units in transit by item, read from the transfer ledgers of the sharded
// items (only they borrow between shards); nil without the capability.
func (r *redisInventory) inTransit(ctx context.Context, items []sale.Item) (map[string]int64, error) {
	if r.transit == nil {
		return nil, nil
	}
	var sharded []sale.Item
	for _, it := range items {
		if it.ShardCount() > 1 {
			sharded = append(sharded, it)
		}
	}
	if len(sharded) == 0 {
		return nil, nil
	}
	states, err := r.transit.Snapshot(ctx, r.items.sale, sharded)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(states))
	for _, st := range states {
		for _, sh := range st.Shards {
			out[st.ItemID] += sh.InTransit
		}
	}
	return out, nil
}

// postgresOrders reads every item's quantity, sold counter, live and paid orders with the
// profile's queries.
type postgresOrders struct {
	items *itemList
	// statuses, when set (fsctl serve's database), adds the orders by status: pending, expired,
	// cancelled and failed, which no profile query counts.
	statuses orders.Queryer
}

// Orders returns every item's counts; Paid is -1 when the profile has no paid query. A failed
// query's error names it (sql.live, ...) and carries the database's own error.
func (o *postgresOrders) Orders(ctx context.Context) ([]ItemOrders, error) {
	items, err := o.items.list(ctx)
	if err != nil {
		return nil, err
	}
	byStatus, err := o.byStatus(ctx)
	if err != nil {
		return nil, err
	}
	db, saleID := o.items.db, o.items.sale
	out := make([]ItemOrders, 0, len(items))
	for _, it := range items {
		row, err := db.Item(ctx, saleID, it.ID)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.ID, err)
		}
		live, err := db.Live(ctx, saleID, it.ID)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.ID, err)
		}
		paid, ok, err := db.Paid(ctx, saleID, it.ID)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.ID, err)
		}
		if !ok {
			paid = -1
		}
		c, ok := byStatus[it.ID]
		out = append(out, ItemOrders{ID: it.ID, Quantity: row.Quantity, Sold: row.Sold, Live: live, Paid: paid, LiveOnly: !ok,
			Pending: c.Pending, Expired: c.Expired, Cancelled: c.Cancelled, Failed: c.Failed})
	}
	return out, nil
}

// byStatus returns the sale's order counts by item; nil without the capability.
func (o *postgresOrders) byStatus(ctx context.Context) (map[string]orders.ItemCounts, error) {
	if o.statuses == nil {
		return nil, nil
	}
	counts, err := orders.CountsIn(ctx, o.statuses, o.items.sale)
	if err != nil {
		return nil, err
	}
	out := make(map[string]orders.ItemCounts, len(counts))
	for _, c := range counts {
		out[c.ItemID] = c
	}
	return out, nil
}
