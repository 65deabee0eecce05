package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// scanPage is the COUNT hint of the HSCAN/ZSCAN reads of Inspect, small enough not to stall
// Redis during a sale.
const scanPage = 1000

// ShardRecords is everything one shard of an item holds about its buyers, read for reconciliation.
type ShardRecords struct {
	Shard int
	// Stock is the counter, and HasStock whether it exists at all.
	Stock    int64
	HasStock bool
	// Orders are the live orders of the shard's orders hash (pending or paid), by order id.
	Orders map[uuid.UUID]Hold
	// Holds are the live holds: order id → expiry.
	Holds map[uuid.UUID]time.Time
	// Buyers are the buyer records: user → bitmask of occupied slots.
	Buyers map[string]uint32
	// Malformed lists entries that could not be parsed, as "key field: reason".
	Malformed []string
}

// Inspect reads one shard's counter, orders, holds and buyer records with HSCAN/ZSCAN pages, so it
// can run during a sale without blocking Redis. The reads are not one snapshot: an order reserved
// or released meanwhile may show in one structure and not another, which the caller treats as in
// flight.
func (s *Store) Inspect(ctx context.Context, saleID, itemID string, shard, shards int) (ShardRecords, error) {
	k := ShardKeys(saleID, itemID, shard, shards)
	r := ShardRecords{Shard: shard, Orders: map[uuid.UUID]Hold{}, Holds: map[uuid.UUID]time.Time{}, Buyers: map[string]uint32{}}
	n, err := s.rdb.Get(ctx, k.Stock()).Int64()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return r, fmt.Errorf("read stock of %s/%s shard %d: %w", saleID, itemID, shard, err)
	default:
		r.Stock, r.HasStock = n, true
	}
	if err := s.scanHash(ctx, k.Orders(), func(field, val string) {
		h, err := parseHold(field, val)
		if err != nil {
			r.Malformed = append(r.Malformed, k.Orders()+" "+field+": "+err.Error())
			return
		}
		h.Shard = shard
		r.Orders[h.OrderID] = h
	}); err != nil {
		return r, err
	}
	if err := s.scanHash(ctx, k.Buyers(), func(user, val string) {
		mask, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			r.Malformed = append(r.Malformed, k.Buyers()+" "+user+": "+err.Error())
			return
		}
		r.Buyers[user] = uint32(mask)
	}); err != nil {
		return r, err
	}
	iter := s.rdb.ZScan(ctx, k.Holds(), 0, "", scanPage).Iterator()
	for iter.Next(ctx) {
		member := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		score, _ := strconv.ParseFloat(iter.Val(), 64)
		id, err := uuid.Parse(member)
		if err != nil {
			r.Malformed = append(r.Malformed, k.Holds()+" "+member+": not an order id")
			continue
		}
		r.Holds[id] = time.UnixMilli(int64(score)).UTC()
	}
	if err := iter.Err(); err != nil {
		return r, fmt.Errorf("scan %s: %w", k.Holds(), err)
	}
	return r, nil
}

func (s *Store) scanHash(ctx context.Context, key string, fn func(field, val string)) error {
	iter := s.rdb.HScan(ctx, key, 0, "", scanPage).Iterator()
	for iter.Next(ctx) {
		field := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		fn(field, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", key, err)
	}
	return nil
}

// Restore is one order to put back into Redis.
type Restore struct {
	SaleID, ItemID string
	// Shard of Shards is where the order lives.
	Shard, Shards int
	Hold          Hold
	// Pending orders get their hold back (expiring at Hold.ExpiresAt); paid ones only the record.
	Pending bool
	// TakeUnit takes the order's unit out of the stock counter (the counter was counting it as
	// on sale); false when the counter was loaded as quantity − sold.
	TakeUnit bool
}

// Outcomes of RestoreOrder.
var (
	ErrSlotTaken = errors.New("the buyer's slot is taken by another order")
	ErrNoUnit    = errors.New("no unit left in the shard to give the order")
)

// RestoreOrder puts one order back into its shard atomically: its orders entry, its slot in the
// buyer record and, when pending, its hold. It reports whether anything changed; an order whose
// record is there already only gets a lost hold back.
func (s *Store) RestoreOrder(ctx context.Context, r Restore) (bool, error) {
	k := ShardKeys(r.SaleID, r.ItemID, r.Shard, r.Shards)
	exp, take := "", "0"
	if r.Pending {
		exp = strconv.FormatInt(r.Hold.ExpiresAt.UnixMilli(), 10)
	}
	if r.TakeUnit {
		take = "1"
	}
	saleSlot := ""
	if r.Hold.Claimed {
		saleSlot = strconv.Itoa(r.Hold.SaleSlot)
	}
	keys := []string{k.Stock(), k.Buyers(), k.Holds(), k.Orders()}
	args := []any{r.Hold.OrderID.String(), r.Hold.UserID, r.Hold.Slot, r.Hold.IdemKey, exp, take, saleSlot}
	if r.Hold.IdemKey != "" { // the key's record comes back with the order: a replay hears its RESERVED
		keys = append(keys, k.Idem(r.Hold.UserID, r.Hold.IdemKey))
		args = append(args, s.idemTTLms, strconv.FormatInt(r.Hold.ExpiresAt.UnixMilli(), 10))
	}
	n, err := s.restore.Run(ctx, s.rdb, keys, args...).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("restore order %s: %w", r.Hold.OrderID, err)
	case n == -1:
		return false, ErrSlotTaken
	case n == -2:
		return false, ErrNoUnit
	}
	return n == 1, nil
}

// SetBuyerMask overwrites a buyer record (HDEL when mask is 0): reconcile clears slots no live
// order occupies, which would otherwise refuse the buyer as ALREADY_PURCHASED.
func (s *Store) SetBuyerMask(ctx context.Context, saleID, itemID string, shard, shards int, userID string, mask uint32) error {
	k := ShardKeys(saleID, itemID, shard, shards)
	var err error
	if mask == 0 {
		err = s.rdb.HDel(ctx, k.Buyers(), userID).Err()
	} else {
		err = s.rdb.HSet(ctx, k.Buyers(), userID, mask).Err()
	}
	if err != nil {
		return fmt.Errorf("set buyer record of %s: %w", userID, err)
	}
	return nil
}

// AdjustStock moves a shard's counter by delta, refusing to take it below zero.
func (s *Store) AdjustStock(ctx context.Context, saleID, itemID string, shard, shards int, delta int64) error {
	k := ShardKeys(saleID, itemID, shard, shards)
	n, err := s.rdb.IncrBy(ctx, k.Stock(), delta).Result()
	if err != nil {
		return fmt.Errorf("adjust stock of %s/%s shard %d: %w", saleID, itemID, shard, err)
	}
	if n < 0 {
		_ = s.rdb.IncrBy(ctx, k.Stock(), -delta).Err()
		return fmt.Errorf("adjust stock of %s/%s shard %d by %d: it would go negative", saleID, itemID, shard, delta)
	}
	return nil
}
