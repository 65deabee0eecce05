// Package reconcile compares what Redis, PostgreSQL and Kafka say about a sale and reports every
// broken invariant of docs/design.md: oversell, the per-user limit, lost or doubly returned
// units, and holds that disagree with the orders they stand for.
package reconcile

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
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

func check(r ItemReport, limit int) []string {
	var p []string
	c := r.Counts
	live := c.Pending + c.Paid
	if live > r.Quantity {
		p = append(p, fmt.Sprintf("oversold: %d live orders for %d units", live, r.Quantity))
	}
	if c.Sold != live {
		p = append(p, fmt.Sprintf("sold counter %d disagrees with %d live orders", c.Sold, live))
	}
	if r.MaxLivePerUser > limit {
		p = append(p, fmt.Sprintf("per-user limit: a user holds %d live orders, limit %d", r.MaxLivePerUser, limit))
	}
	if r.Stock+r.Holds != r.Quantity-c.Paid {
		p = append(p, fmt.Sprintf("units lost or doubled: redis stock %d + holds %d != quantity %d - paid %d", r.Stock, r.Holds, r.Quantity, c.Paid))
	}
	if r.Holds != c.Pending {
		p = append(p, fmt.Sprintf("redis has %d live holds but PostgreSQL %d pending orders", r.Holds, c.Pending))
	}
	for _, sh := range r.Shards {
		if sh.Stock < 0 {
			p = append(p, fmt.Sprintf("shard %d stock is negative: %d", sh.Shard, sh.Stock))
		}
	}
	return p
}
