package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// pgOrder is an order row as reconcile compares it.
type pgOrder struct {
	ID        uuid.UUID
	ItemID    string
	UserID    string
	Slot      int
	Status    string
	Shard     int
	CreatedAt time.Time
	ExpiresAt time.Time
	// SaleSlot is the per-sale claim slot the order holds; nil for a sale without a per-sale limit.
	SaleSlot *int
	// IdemKey is the buyer's Idempotency-Key ('' for none or an order placed before it was kept).
	IdemKey string
}

// hold is the order as its shard's record keeps it, for a restore.
func (o pgOrder) hold() stock.Hold {
	h := stock.Hold{OrderID: o.ID, UserID: o.UserID, Slot: o.Slot, ExpiresAt: o.ExpiresAt, IdemKey: o.IdemKey}
	if o.SaleSlot != nil {
		h.Claimed, h.SaleSlot = true, *o.SaleSlot
	}
	return h
}

// restoreClaim puts the per-sale claim of a live order back, if it holds one (the slot taken by
// another order is left: PostgreSQL's index keeps the two apart).
func restoreClaim(ctx context.Context, st *stock.Store, saleID string, o pgOrder) error {
	if o.SaleSlot == nil {
		return nil
	}
	_, err := st.RestoreClaim(ctx, saleID, stock.Claim{UserID: o.UserID, Slot: *o.SaleSlot, ItemID: o.ItemID, IdemKey: o.IdemKey, OrderID: o.ID})
	if errors.Is(err, stock.ErrSlotTaken) {
		return nil
	}
	return err
}

// itemState is everything both stores say about one item.
type itemState struct {
	item   sale.Item
	shards []stock.ShardRecords
	counts orders.ItemCounts
	// live are PostgreSQL's live orders of the item; other are the statuses of the orders Redis
	// holds that PostgreSQL does not count live (closed, or absent when missing).
	live  map[uuid.UUID]pgOrder
	other map[uuid.UUID]string
}

// readItems reads Redis shard by shard, then PostgreSQL: an order that moves meanwhile is seen in
// Redis first and in PostgreSQL after, so it looks in flight rather than lost.
func readItems(ctx context.Context, st *stock.Store, db *orders.Store, sl sale.Sale) ([]itemState, error) {
	out := make([]itemState, len(sl.Items))
	for i, it := range sl.Items {
		out[i].item = it
		for k := range it.ShardCount() {
			rec, err := st.Inspect(ctx, sl.ID, it.ID, k, it.ShardCount())
			if err != nil {
				return nil, err
			}
			out[i].shards = append(out[i].shards, rec)
		}
	}
	counts, live, err := pgSnapshot(ctx, db, sl.ID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for _, c := range counts {
			if c.ItemID == out[i].item.ID {
				out[i].counts = c
			}
		}
		out[i].live = map[uuid.UUID]pgOrder{}
		for _, o := range live {
			if o.ItemID == out[i].item.ID {
				out[i].live[o.ID] = o
			}
		}
		var unknown []uuid.UUID
		for _, sh := range out[i].shards {
			for id := range sh.Orders {
				if _, ok := out[i].live[id]; !ok {
					unknown = append(unknown, id)
				}
			}
			for id := range sh.Holds {
				if _, ok := out[i].live[id]; !ok {
					unknown = append(unknown, id)
				}
			}
		}
		if out[i].other, err = statuses(ctx, db, unknown); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pgSnapshot reads the item counts and the live orders of a sale from one PostgreSQL snapshot, so
// an order that closes between the two reads cannot be counted sold by one and missing from the
// other (a rebuild built from such a pair would lose its unit).
func pgSnapshot(ctx context.Context, db *orders.Store, saleID string) (counts []orders.ItemCounts, live []pgOrder, err error) {
	err = db.Snapshot(ctx, func(q orders.Queryer) error {
		if counts, err = orders.CountsIn(ctx, q, saleID); err != nil {
			return err
		}
		live, err = liveOrders(ctx, q, saleID)
		return err
	})
	return counts, live, err
}

func liveOrders(ctx context.Context, q orders.Queryer, saleID string) ([]pgOrder, error) {
	rows, err := q.Query(ctx, `SELECT id, item_id, user_id, slot, status, shard, created_at, expires_at, sale_slot,
		coalesce(idem_key, '') FROM orders WHERE sale_id = $1 AND status IN ('PENDING', 'PAID')`, saleID)
	if err != nil {
		return nil, fmt.Errorf("read live orders of %s: %w", saleID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pgOrder])
	if err != nil {
		return nil, fmt.Errorf("read live orders of %s: %w", saleID, err)
	}
	return out, nil
}

// statuses returns the status of each order PostgreSQL has among ids.
func statuses(ctx context.Context, db *orders.Store, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := map[uuid.UUID]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Pool().Query(ctx, `SELECT id, status FROM orders WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read order statuses: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		out[id] = status
	}
	return out, rows.Err()
}
