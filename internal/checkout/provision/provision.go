// Package provision sets a sale up on the real services: it writes the definition to PostgreSQL,
// the source of truth, and preloads the Redis stock counters and settings from it.
package provision

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Options changes how a sale is set up.
type Options struct {
	// Reset wipes the sale's orders and Redis state first: for demos, tests and rehearsals only.
	Reset bool
}

// Report says what Sale did, item by item.
type Report struct {
	SaleID string
	Items  []ItemReport
}

// ItemReport is one item's set-up.
type ItemReport struct {
	ItemID   string
	Quantity int64
	Sold     int64
	Stock    int64
	// Shards is how many Redis counters the stock is split over.
	Shards int
	// Action is what happened to the Redis counter: loaded, kept, or adjusted by a quantity change.
	Action stock.PreloadAction
}

// Sale writes sl to PostgreSQL and preloads Redis. An item whose Redis counter already exists
// keeps it, moved only by a change of quantity: overwriting a live counter would invent or lose
// units mid-sale. A missing counter is loaded with quantity minus what PostgreSQL counts as sold.
func Sale(ctx context.Context, db *orders.Store, st *stock.Store, sl sale.Sale, opt Options) (Report, error) {
	if err := sl.Validate(); err != nil {
		return Report{}, err
	}
	if opt.Reset {
		if err := st.Reset(ctx, sl); err != nil {
			return Report{}, err
		}
	}
	if err := db.SaveSale(ctx, sl); err != nil {
		return Report{}, fmt.Errorf("save sale %s: %w", sl.ID, err)
	}
	if opt.Reset {
		if err := db.ResetSale(ctx, sl.ID); err != nil {
			return Report{}, err
		}
	}
	counts, err := db.Counts(ctx, sl.ID)
	if err != nil {
		return Report{}, fmt.Errorf("read sold counts of %s: %w", sl.ID, err)
	}
	remaining := make(map[string]int64, len(counts))
	sold := make(map[string]int64, len(counts))
	for _, c := range counts {
		remaining[c.ItemID] = c.Quantity - c.Sold
		sold[c.ItemID] = c.Sold
	}
	// Every shard carries its item's epoch, PostgreSQL's (0 until a rebuild): loaded with an older
	// one, every reservation it took would be dropped as stale.
	epochs, err := db.Epochs(ctx, sl.ID)
	if err != nil {
		return Report{}, err
	}
	for i := range sl.Items {
		sl.Items[i].Epoch = epochs[sl.Items[i].ID]
	}
	if err := st.LoadScripts(ctx); err != nil {
		return Report{}, err
	}
	actions, err := st.Preload(ctx, sl, remaining)
	if err != nil {
		return Report{}, err
	}
	snap, err := st.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return Report{}, err
	}
	rep := Report{SaleID: sl.ID}
	for i, it := range sl.Items {
		rep.Items = append(rep.Items, ItemReport{
			ItemID: it.ID, Quantity: it.Quantity, Sold: sold[it.ID], Stock: snap[i].Stock,
			Shards: it.ShardCount(), Action: actions[it.ID],
		})
	}
	return rep, nil
}
