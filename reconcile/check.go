// Package reconcile compares what Redis, PostgreSQL and Kafka say about a sale and reports every
// broken invariant of docs/design.md: oversell, the per-user limit, lost or doubly returned
// units, and holds that disagree with the orders they stand for.
package reconcile

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/proof/verify"
)

// Stock reads the Redis side; *stock.Store implements it.
type Stock interface {
	Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]stock.ItemState, error)
}

// Orders reads the source of truth; *orders.Store implements it.
type Orders interface {
	Counts(ctx context.Context, saleID string) ([]orders.ItemCounts, error)
	MaxLivePerUser(ctx context.Context, saleID, itemID string) (int, error)
}

// ItemReport is one item as both stores see it.
type ItemReport struct {
	ItemID   string `json:"item"`
	Quantity int64  `json:"quantity"`
	// Redis: stock summed over shards (units in transit between shards included) and live holds.
	Stock  int64              `json:"redisStock"`
	Holds  int64              `json:"redisHolds"`
	Shards []stock.ShardState `json:"shards"`
	// PostgreSQL.
	Counts         orders.ItemCounts `json:"postgres"`
	MaxLivePerUser int               `json:"maxLivePerUser"`
	// Problems lists every invariant the item breaks; empty means it is consistent.
	Problems []string `json:"problems"`
	// Findings are Run's order-by-order comparison; InFlight counts the Redis orders on their way
	// to PostgreSQL, which the unit and hold counts wait for.
	Findings []Finding `json:"findings,omitempty"`
	InFlight int       `json:"inFlight"`
}

// Sale checks every item of a settled sale (no order still in flight between Redis, Kafka and
// PostgreSQL). During a sale, holds still on their way to PostgreSQL show as a holds/pending gap.
func Sale(ctx context.Context, st Stock, db Orders, sl sale.Sale) ([]ItemReport, error) {
	states, err := st.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return nil, err
	}
	counts, err := db.Counts(ctx, sl.ID)
	if err != nil {
		return nil, err
	}
	byItem := make(map[string]orders.ItemCounts, len(counts))
	for _, c := range counts {
		byItem[c.ItemID] = c
	}
	out := make([]ItemReport, len(sl.Items))
	for i, it := range sl.Items {
		r := ItemReport{ItemID: it.ID, Quantity: it.Quantity, Stock: states[i].Stock, Holds: states[i].Holds,
			Shards: states[i].Shards, Counts: byItem[it.ID]}
		if r.MaxLivePerUser, err = db.MaxLivePerUser(ctx, sl.ID, it.ID); err != nil {
			return nil, err
		}
		r.Problems = check(r, sl.PerUserLimit)
		out[i] = r
	}
	return out, nil
}

// check returns every invariant the item breaks (package verify's rules).
func check(r ItemReport, limit int) []string {
	return verify.Strings(verify.Check(r.Item(limit)), false)
}

// Item is the item as verify reads it: Redis's stock and holds shard by shard, PostgreSQL's
// counts and the most live orders one user holds, held to limit per user.
func (r ItemReport) Item(limit int) verify.Item {
	c := r.Counts
	it := verify.Item{ID: r.ItemID, Quantity: r.Quantity, Stock: r.Stock, Holds: verify.Of(r.Holds),
		Sold: verify.Of(c.Sold), Live: c.Pending + c.Paid, Paid: verify.Of(c.Paid),
		MaxLivePerUser: verify.Of(int64(r.MaxLivePerUser)), PerUserLimit: limit}
	for _, sh := range r.Shards {
		it.Shards = append(it.Shards, verify.Shard{Name: fmt.Sprintf("shard %d stock", sh.Shard), Stock: sh.Stock})
	}
	return it
}
