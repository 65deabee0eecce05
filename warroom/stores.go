package warroom

import (
	"context"
	"fmt"
	"sync"

	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
)

// SaleLoader loads a sale's definition; *orders.Store implements it.
type SaleLoader interface {
	LoadSale(ctx context.Context, id string) (sale.Sale, error)
}

// RedisInventory reads the items' counters from Redis with stock.Store.Snapshot: plain reads, no
// scripts, refreshed on the slow tick only, so the dashboard does not load the reservation path.
type RedisInventory struct {
	Stock *stock.Store
	// Sale loads the item list once (PostgreSQL may come up after the dashboard).
	Sale SaleLoader
	ID   string

	mu    sync.Mutex
	items []sale.Item
}

// Inventory returns every item's remaining and held units, summed over shards (units in transit
// between shards count as remaining).
func (r *RedisInventory) Inventory(ctx context.Context) ([]ItemStock, error) {
	items, err := r.saleItems(ctx)
	if err != nil {
		return nil, err
	}
	states, err := r.Stock.Snapshot(ctx, r.ID, items)
	if err != nil {
		return nil, err
	}
	out := make([]ItemStock, len(items))
	for i, it := range items {
		out[i] = ItemStock{ID: it.ID, Quantity: it.Quantity, Remaining: states[i].Stock, Held: states[i].Holds, Buyers: states[i].Buyers,
			Shards: it.ShardCount()}
	}
	return out, nil
}

func (r *RedisInventory) saleItems(ctx context.Context) ([]sale.Item, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.items != nil {
		return r.items, nil
	}
	if r.Sale == nil {
		return nil, fmt.Errorf("no sale definition source")
	}
	sl, err := r.Sale.LoadSale(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("load sale %s: %w", r.ID, err)
	}
	r.items = sl.Items
	return r.items, nil
}

// PostgresOrders reads orders by status from PostgreSQL, connecting on first use and again after
// a failure, so a database that is down when the dashboard starts shows as down, not as a crash.
type PostgresOrders struct {
	URL string
	ID  string

	mu    sync.Mutex
	store *orders.Store
}

// NewPostgresOrders returns the orders source of sale id; store may be nil (opened on first use).
func NewPostgresOrders(url, id string, store *orders.Store) *PostgresOrders {
	return &PostgresOrders{URL: url, ID: id, store: store}
}

// Store returns the connected store, connecting now if needed.
func (p *PostgresOrders) Store(ctx context.Context) (*orders.Store, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store != nil {
		return p.store, nil
	}
	st, err := orders.Open(ctx, p.URL)
	if err != nil {
		return nil, err
	}
	p.store = st
	return st, nil
}

// LoadSale implements SaleLoader over the same connection.
func (p *PostgresOrders) LoadSale(ctx context.Context, id string) (sale.Sale, error) {
	st, err := p.Store(ctx)
	if err != nil {
		return sale.Sale{}, err
	}
	return st.LoadSale(ctx, id)
}

// Orders returns every item's orders by status.
func (p *PostgresOrders) Orders(ctx context.Context) ([]ItemOrders, error) {
	st, err := p.Store(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := st.Counts(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	out := make([]ItemOrders, len(counts))
	for i, c := range counts {
		out[i] = ItemOrders{ID: c.ItemID, Quantity: c.Quantity, Sold: c.Sold, Pending: c.Pending, Paid: c.Paid,
			Expired: c.Expired, Cancelled: c.Cancelled, Failed: c.Failed, Live: c.Pending + c.Paid}
	}
	return out, nil
}

// Close closes the connection, if one was made.
func (p *PostgresOrders) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store != nil {
		p.store.Close()
		p.store = nil
	}
}
