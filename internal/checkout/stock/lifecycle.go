package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Release is a request to return one live hold's unit to stock.
type Release struct {
	SaleID, ItemID string
	// Shard is where the hold lives (Reservation.Shard, the buyer's home shard), of the item's
	// Shards (sale.Item.ShardCount()).
	Shard, Shards int
	OrderID       uuid.UUID
	// Status is what the order became: FAILED, EXPIRED or CANCELLED. A FAILED order also forgets the
	// idempotency record its reserve wrote, so the buyer's retry with that key is a fresh attempt.
	Status string
	// ForgetUser and ForgetKey, when set, name an idempotency record to forget as well (while it
	// still names this order).
	ForgetUser, ForgetKey string
	// UnlessHanded leaves an order whose hand-off another attempt confirmed (Store.Confirm): the
	// failed hand-off's release, which must not take a unit its buyer was told is theirs.
	UnlessHanded bool
}

// Release returns the unit of one live, unpaid hold to its shard's stock. It reports whether this
// call released it: a second release, a release of a settled (paid) order and a release of an order
// never reserved are no-ops that return false.
func (s *Store) Release(ctx context.Context, r Release) (bool, error) {
	k := ShardKeys(r.SaleID, r.ItemID, r.Shard, r.Shards)
	keys := []string{k.Stock(), k.Buyers(), k.Holds(), k.Orders(), k.Released(r.OrderID), k.Handed(r.OrderID)}
	if r.ForgetKey != "" {
		keys = append(keys, k.Idem(r.ForgetUser, r.ForgetKey))
	}
	unlessHanded := "0"
	if r.UnlessHanded {
		unlessHanded = "1"
	}
	res, err := s.release.Run(ctx, s.rdb, keys, r.OrderID.String(), r.Status, s.markerTTL.Milliseconds(), k.idemPrefix(), unlessHanded).Slice()
	if err != nil {
		return false, fmt.Errorf("release order %s: %w", r.OrderID, err)
	}
	if len(res) != 3 {
		return false, fmt.Errorf("release order %s: the script answered %d fields, want 3", r.OrderID, len(res))
	}
	if n, _ := res[0].(int64); n != 1 {
		return false, nil
	}
	// The order held a per-sale claim (claims.go): the buyer gets the slot back. The unit is
	// released whatever happens here; a claim this fails to give back keeps the buyer from buying
	// until SweepClaims finds no live order holding it, never lets them buy more.
	if user, _ := res[1].(string); user != "" {
		if slot, _ := res[2].(string); slot != "" {
			_, _ = s.unclaim(ctx, r.SaleID, user, r.OrderID, uuid.Nil)
		}
	}
	return true, nil
}

// Settle is a request to record that an order was paid.
type Settle struct {
	SaleID, ItemID string
	Shard, Shards  int
	OrderID        uuid.UUID
}

// Settle turns a paid order's hold into a sold unit: the hold stops expiring, the order keeps its
// record and the buyer's limit slot, stock does not move. It reports whether this call settled it;
// settling twice, or settling a released order, returns false.
func (s *Store) Settle(ctx context.Context, r Settle) (bool, error) {
	k := ShardKeys(r.SaleID, r.ItemID, r.Shard, r.Shards)
	n, err := s.settle.Run(ctx, s.rdb, []string{k.Holds(), k.Released(r.OrderID)},
		r.OrderID.String(), s.markerTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("settle order %s: %w", r.OrderID, err)
	}
	return n == 1, nil
}

// SetOrderRef records which sale, item, user and shard an order belongs to, for lookups by order id.
func (s *Store) SetOrderRef(ctx context.Context, orderID uuid.UUID, saleID, itemID, userID string, shard, shards int) error {
	if err := s.rdb.Set(ctx, OrderRefKey(orderID), orderRef(saleID, itemID, userID, shard, shards), s.markerTTL).Err(); err != nil {
		return fmt.Errorf("record order %s: %w", orderID, err)
	}
	return nil
}

// orderRef is the value of an order's reference: "sale\nitem\nuser\nshard\nshards".
func orderRef(saleID, itemID, userID string, shard, shards int) string {
	return saleID + "\n" + itemID + "\n" + userID + "\n" + strconv.Itoa(shard) + "\n" + strconv.Itoa(shards)
}

// Order statuses Redis reports besides the final ones a release records.
const (
	StatusPending = "PENDING"
	StatusPaid    = "PAID"
)

// OrderState is what Redis knows of an order that PostgreSQL may not have yet.
type OrderState struct {
	SaleID, ItemID, UserID string
	// Shard of Shards holds the order.
	Shard, Shards int
	// Status is PENDING while the hold is live, PAID once settled, or the final status a release
	// recorded.
	Status string
}

// LookupOrder finds an order by id in Redis. ok is false when Redis has never heard of it.
func (s *Store) LookupOrder(ctx context.Context, orderID uuid.UUID) (st OrderState, ok bool, err error) {
	ref, err := s.rdb.Get(ctx, OrderRefKey(orderID)).Result()
	if errors.Is(err, redis.Nil) {
		return OrderState{}, false, nil
	}
	if err != nil {
		return OrderState{}, false, fmt.Errorf("look up order %s: %w", orderID, err)
	}
	st, err = parseOrderRef(ref)
	if err != nil {
		return OrderState{}, false, fmt.Errorf("order %s: %w", orderID, err)
	}
	k := ShardKeys(st.SaleID, st.ItemID, st.Shard, st.Shards)
	pipe := s.rdb.Pipeline()
	held := pipe.ZScore(ctx, k.Holds(), orderID.String())
	recorded := pipe.HExists(ctx, k.Orders(), orderID.String())
	marker := pipe.Get(ctx, k.Released(orderID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return OrderState{}, false, fmt.Errorf("look up order %s: %w", orderID, err)
	}
	switch {
	case held.Err() == nil:
		st.Status = StatusPending
	case recorded.Val():
		st.Status = StatusPaid
	case marker.Val() != "":
		st.Status = marker.Val()
	default:
		return OrderState{}, false, nil
	}
	return st, true, nil
}

// parseOrderRef reads "sale\nitem\nuser\nshard\nshards", or the "sale\nitem\nuser" of an unsharded
// item written before shards. The "sale\nitem\nuser\nshard" of the fsctl that did not spread
// shards is refused: its shard's keys are no longer where they were.
func parseOrderRef(ref string) (OrderState, error) {
	parts := strings.Split(ref, "\n")
	switch len(parts) {
	case 3:
		return OrderState{SaleID: parts[0], ItemID: parts[1], UserID: parts[2], Shards: 1}, nil
	case 5:
		k, err1 := strconv.Atoi(parts[3])
		n, err2 := strconv.Atoi(parts[4])
		if err1 != nil || err2 != nil || k < 0 || n < 1 || k >= n {
			return OrderState{}, fmt.Errorf("malformed shard in reference %q", ref)
		}
		return OrderState{SaleID: parts[0], ItemID: parts[1], UserID: parts[2], Shard: k, Shards: n}, nil
	}
	return OrderState{}, fmt.Errorf("malformed reference %q (one written by an fsctl older than spread shards? re-create the sale)", ref)
}

// Hold is one live (unpaid, unreleased) hold, as the orphaned-hold sweeper needs it.
type Hold struct {
	OrderID   uuid.UUID
	UserID    string
	Slot      int
	IdemKey   string
	ExpiresAt time.Time
	Shard     int
	// Claimed is set when the order holds one of its buyer's per-sale slots: SaleSlot.
	Claimed  bool
	SaleSlot int
}

// holdsPage is how many holds one ZRANGE reads.
const holdsPage = 1000

// Holds lists every live hold of one shard, oldest expiry first. It pages by score (two round
// trips per 1,000 holds), so holds released or settled meanwhile can shift only holds sharing the
// last listed expiry millisecond into the next sweep; a hold that leaves between its page's two
// reads is left out, one that arrives may or may not be listed.
func (s *Store) Holds(ctx context.Context, saleID, itemID string, shard, shards int) ([]Hold, error) {
	k := ShardKeys(saleID, itemID, shard, shards)
	var out []Hold
	minScore, skip := "-inf", int64(0) // skip: members at exactly minScore already listed
	for {
		page, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
			Key: k.Holds(), Start: minScore, Stop: "+inf", ByScore: true, Offset: skip, Count: holdsPage,
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("list holds of %s/%s shard %d: %w", saleID, itemID, shard, err)
		}
		if len(page) == 0 {
			return out, nil
		}
		ids := make([]string, len(page))
		for i, z := range page {
			ids[i], _ = z.Member.(string)
		}
		recs, err := s.rdb.HMGet(ctx, k.Orders(), ids...).Result()
		if err != nil {
			return nil, fmt.Errorf("list holds of %s/%s shard %d: %w", saleID, itemID, shard, err)
		}
		for i, z := range page {
			rec, ok := recs[i].(string)
			if !ok {
				continue // released between the two reads
			}
			h, err := parseHold(ids[i], rec)
			if err != nil {
				return nil, fmt.Errorf("hold of %s/%s shard %d: %w", saleID, itemID, shard, err)
			}
			h.ExpiresAt, h.Shard = time.UnixMilli(int64(z.Score)).UTC(), shard
			out = append(out, h)
		}
		if len(page) < holdsPage {
			return out, nil
		}
		last := strconv.FormatFloat(page[len(page)-1].Score, 'f', -1, 64)
		if last != minScore {
			minScore, skip = last, 0
		}
		for i := len(page) - 1; i >= 0 && page[i].Score == page[len(page)-1].Score; i-- {
			skip++
		}
	}
}

// parseHold reads an orders entry: "user\nslot\nidemKey\nsaleSlot" for an order holding a per-sale
// claim, "user\nslot\nidemKey", or "user\nslot" as written before the key was recorded.
func parseHold(orderID, rec string) (Hold, error) {
	id, err := uuid.Parse(orderID)
	if err != nil {
		return Hold{}, fmt.Errorf("order id %q: %w", orderID, err)
	}
	parts := strings.Split(rec, "\n")
	if len(parts) < 2 || len(parts) > 4 {
		return Hold{}, fmt.Errorf("order %s: malformed record %q", orderID, rec)
	}
	slot, err := strconv.Atoi(parts[1])
	if err != nil {
		return Hold{}, fmt.Errorf("order %s: malformed slot in %q", orderID, rec)
	}
	h := Hold{OrderID: id, UserID: parts[0], Slot: slot}
	if len(parts) >= 3 {
		h.IdemKey = parts[2]
	}
	if len(parts) == 4 {
		if h.SaleSlot, err = strconv.Atoi(parts[3]); err != nil {
			return Hold{}, fmt.Errorf("order %s: malformed per-sale slot in %q", orderID, rec)
		}
		h.Claimed = true
	}
	return h, nil
}

// OrderRef names one order's shard, for lookups across many orders.
type OrderRef struct {
	SaleID, ItemID string
	Shard, Shards  int
	OrderID        uuid.UUID
}

// ReleasedOrders reports, for each order, whether its hold already ended in Redis — released
// (failed, expired, cancelled) or settled (paid) — by its final-status marker, in one pipelined
// round trip. An OrderPlaced that arrives for such an order is stale: a hand-off that was reported
// failed (and so released) but delivered after all must not become a live order.
func (s *Store) ReleasedOrders(ctx context.Context, refs []OrderRef) ([]bool, error) {
	out := make([]bool, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(refs))
	for i, r := range refs {
		cmds[i] = pipe.Exists(ctx, ShardKeys(r.SaleID, r.ItemID, r.Shard, r.Shards).Released(r.OrderID))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read release markers: %w", err)
	}
	for i, c := range cmds {
		out[i] = c.Val() == 1
	}
	return out, nil
}
