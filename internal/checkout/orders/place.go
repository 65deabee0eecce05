package orders

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Placement is one reserved order to record: what the Redis reserve granted, as carried by Kafka.
type Placement struct {
	OrderID   uuid.UUID
	SaleID    string
	ItemID    string
	UserID    string
	Slot      int // the buyer's per-user-limit slot, 0..15
	Shard     int // the stock shard holding the unit (the buyer's home shard), 0..63
	CreatedAt time.Time
	ExpiresAt time.Time
	// Epoch is the generation of the item's Redis state the reservation was made on (sale.Item.Epoch).
	Epoch int64
	// SaleSlot is the buyer's per-sale claim slot the order holds, below sale.MaxPerSaleLimit; nil
	// for a sale without a per-sale limit.
	SaleSlot *int
	// IdemKey is the buyer's Idempotency-Key, kept with a placed order so that a rebuild of Redis
	// can give the key its record back; empty for none.
	IdemKey string
}

// Result says what PostgreSQL did with one placement.
type Result int

// The results of a placement.
const (
	// Placed: the order is now PENDING and the item's sold count went up by one.
	Placed Result = iota + 1
	// Duplicate: an order with this id already exists (a redelivery); nothing changed.
	Duplicate
	// Refused: the database's safety net turned the order away; PlaceResult.Reason says why.
	Refused
	// Stale: the reservation was made on a Redis state a rebuild has since replaced, and reached
	// the log after the rebuild's snapshot; its buyer was not told RESERVED and its unit is on
	// sale again, so it is dropped, not recorded (migration 00007).
	Stale
)

// String returns the result's name.
func (r Result) String() string {
	switch r {
	case Placed:
		return "placed"
	case Duplicate:
		return "duplicate"
	case Refused:
		return "refused"
	case Stale:
		return "stale"
	default:
		return fmt.Sprintf("Result(%d)", int(r))
	}
}

// Reasons a placement is refused; each one means the layers above let through something the
// invariants forbid, so a consumer should release the hold and count it loudly.
const (
	ReasonOversold    = "oversold"     // the item had no unit left
	ReasonLimit       = "limit"        // the user already has a live order in that slot
	ReasonSaleLimit   = "sale_limit"   // the user already has a live order of the sale in that per-sale slot
	ReasonUnknownItem = "unknown_item" // no such sale or item
)

// PlaceResult is the answer for one placement.
type PlaceResult struct {
	OrderID uuid.UUID
	Result  Result
	Reason  string // set when Result is Refused
}

// PlaceBatch records placements in one transaction and one round-trip: one call of place_orders
// (migrations 00012 and 00013), which decides each placement as place_order does and takes each
// item's row lock once, the per-user limit decided by the insert's arbiter index whatever plan
// PostgreSQL's statistics would pick. Results come back in the order of ps. An error means nothing was committed (short of
// the connection dropping between the server's commit and its reply), and the whole batch may be
// retried either way: placements that did land then answer Duplicate.
func (s *Store) PlaceBatch(ctx context.Context, ps []Placement) ([]PlaceResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	// Sent in item order so concurrent batches take item row locks in the same order and cannot
	// deadlock; answers are put back in the caller's order.
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ps[a].SaleID, ps[b].SaleID), cmp.Compare(ps[a].ItemID, ps[b].ItemID))
	})
	var c placeColumns
	for _, i := range order {
		if err := c.add(ps[i]); err != nil {
			return nil, err
		}
	}
	var answers []string
	err := s.pool.QueryRow(ctx, `SELECT place_orders($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		c.ids, c.sales, c.items, c.users, c.slots, c.shards, c.created, c.expires, c.epochs, c.saleSlots, c.keys).Scan(&answers)
	if err != nil {
		return nil, fmt.Errorf("place a batch of %d orders: %w", len(ps), err)
	}
	if len(answers) != len(ps) {
		return nil, fmt.Errorf("place a batch of %d orders: place_orders answered %d", len(ps), len(answers))
	}
	out := make([]PlaceResult, len(ps))
	for k, i := range order {
		out[i] = resultOf(ps[i].OrderID, answers[k])
	}
	return out, nil
}

// placeColumns are place_orders' arguments: one array a field, one element a placement.
type placeColumns struct {
	ids              []uuid.UUID
	sales, items     []string
	users            []string
	slots, shards    []int16
	created, expires []time.Time
	epochs           []int64
	saleSlots        []*int16  // nil: the sale has no per-sale limit
	keys             []*string // nil: no Idempotency-Key
}

func (c *placeColumns) add(p Placement) error {
	if p.Slot < 0 || p.Slot > 15 {
		return fmt.Errorf("place order %s: slot %d out of range 0..15", p.OrderID, p.Slot)
	}
	if p.Shard < 0 || p.Shard > 63 {
		return fmt.Errorf("place order %s: shard %d out of range 0..63", p.OrderID, p.Shard)
	}
	var saleSlot *int16
	if p.SaleSlot != nil {
		if *p.SaleSlot < 0 || *p.SaleSlot >= sale.MaxPerSaleLimit {
			return fmt.Errorf("place order %s: per-sale slot %d out of range 0..%d", p.OrderID, *p.SaleSlot, sale.MaxPerSaleLimit-1)
		}
		v := int16(*p.SaleSlot)
		saleSlot = &v
	}
	var key *string
	if p.IdemKey != "" {
		key = &p.IdemKey
	}
	c.ids, c.sales, c.items, c.users = append(c.ids, p.OrderID), append(c.sales, p.SaleID), append(c.items, p.ItemID), append(c.users, p.UserID)
	c.slots, c.shards = append(c.slots, int16(p.Slot)), append(c.shards, int16(p.Shard))
	c.created, c.expires, c.epochs = append(c.created, p.CreatedAt), append(c.expires, p.ExpiresAt), append(c.epochs, p.Epoch)
	c.saleSlots, c.keys = append(c.saleSlots, saleSlot), append(c.keys, key)
	return nil
}

func resultOf(id uuid.UUID, answer string) PlaceResult {
	switch answer {
	case "placed":
		return PlaceResult{OrderID: id, Result: Placed}
	case "duplicate":
		return PlaceResult{OrderID: id, Result: Duplicate}
	case "stale":
		return PlaceResult{OrderID: id, Result: Stale}
	default:
		return PlaceResult{OrderID: id, Result: Refused, Reason: answer}
	}
}
