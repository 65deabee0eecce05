// Package stock is the Redis side of the reservation core: the key scheme, the preload of a sale,
// and the atomic reserve and release scripts of package lua.
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

	"github.com/fsctl/fsctl/lua"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/sale"
)

// Default retention of the records that outlive a reservation.
const (
	DefaultIdemTTL   = 24 * time.Hour
	DefaultMarkerTTL = 7 * 24 * time.Hour
)

// Store runs the reservation scripts against one Redis (or Redis Cluster).
type Store struct {
	rdb       redis.UniversalClient
	reserve   *redis.Script
	release   *redis.Script
	preload   *redis.Script
	idemTTL   time.Duration
	markerTTL time.Duration
}

// Option configures a Store.
type Option func(*Store)

// IdemTTL sets how long the answer to an Idempotency-Key is remembered.
func IdemTTL(d time.Duration) Option { return func(s *Store) { s.idemTTL = d } }

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{
		rdb:       rdb,
		reserve:   redis.NewScript(lua.Reserve),
		release:   redis.NewScript(lua.Release),
		preload:   redis.NewScript(lua.Preload),
		idemTTL:   DefaultIdemTTL,
		markerTTL: DefaultMarkerTTL,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// LoadScripts loads the scripts into Redis's script cache, so the first burst of EVALSHA calls
// does not fall back to sending the script body.
func (s *Store) LoadScripts(ctx context.Context) error {
	for name, sc := range map[string]*redis.Script{"reserve": s.reserve, "release": s.release, "preload": s.preload} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load %s script: %w", name, err)
		}
	}
	return nil
}

// ScriptsLoaded reports whether both scripts are in Redis's script cache.
func (s *Store) ScriptsLoaded(ctx context.Context) (bool, error) {
	ok, err := s.rdb.ScriptExists(ctx, s.reserve.Hash(), s.release.Hash()).Result()
	if err != nil {
		return false, err
	}
	return ok[0] && ok[1], nil
}

// Request is one purchase attempt as the reserve script sees it.
type Request struct {
	SaleID, ItemID string
	UserID         string
	IdemKey        string
	// OrderID is the id the order gets if this attempt reserves a unit.
	OrderID uuid.UUID
}

// Reservation is the answer of the reserve script.
type Reservation struct {
	Outcome   outcome.Code
	OrderID   uuid.UUID
	ExpiresAt time.Time
	Slot      int
	// Replay is true when the answer was remembered from an earlier request with the same key.
	Replay bool
}

// Reserve runs the reserve script for one request.
func (s *Store) Reserve(ctx context.Context, r Request) (Reservation, error) {
	k := ItemKeys(r.SaleID, r.ItemID)
	keys := []string{k.Meta(), k.Stock(), k.Buyers(), k.Holds(), k.Orders(), k.Idem(r.UserID, r.IdemKey)}
	res, err := s.reserve.Run(ctx, s.rdb, keys, r.UserID, r.OrderID.String(), s.idemTTL.Milliseconds()).StringSlice()
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve %s/%s: %w", r.SaleID, r.ItemID, err)
	}
	return parseReservation(res)
}

func parseReservation(res []string) (Reservation, error) {
	if len(res) != 5 {
		return Reservation{}, fmt.Errorf("reserve script answered %d fields, want 5", len(res))
	}
	rv := Reservation{Replay: res[4] == "1"}
	switch c := outcome.Code(res[0]); c {
	case outcome.Reserved:
		rv.Outcome = c
	case outcome.SoldOut, outcome.AlreadyPurchased, outcome.NotStarted, outcome.Paused:
		rv.Outcome = c
		return rv, nil
	case outcome.NotFound:
		return rv, outcome.Errorf(outcome.NotFound, "item is not on sale (not preloaded)")
	default:
		return Reservation{}, fmt.Errorf("reserve script answered unknown code %q", res[0])
	}
	id, err := uuid.Parse(res[1])
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered order id %q: %w", res[1], err)
	}
	ms, err := strconv.ParseInt(res[2], 10, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered expiry %q: %w", res[2], err)
	}
	slot, err := strconv.Atoi(res[3])
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered slot %q: %w", res[3], err)
	}
	rv.OrderID, rv.ExpiresAt, rv.Slot = id, time.UnixMilli(ms).UTC(), slot
	return rv, nil
}

// Release is a request to return one hold's unit to stock.
type Release struct {
	SaleID, ItemID string
	OrderID        uuid.UUID
	// Status is what the order became: FAILED, EXPIRED or CANCELLED.
	Status string
	// ForgetUser and ForgetKey, when set, name the idempotency record to forget, so the buyer's
	// retry with the same key is a fresh attempt (used when the order was never acknowledged).
	ForgetUser, ForgetKey string
}

// Release returns the unit of one hold to stock. It reports whether this call released it; a
// second release of the same order is a no-op that returns false.
func (s *Store) Release(ctx context.Context, r Release) (bool, error) {
	k := ItemKeys(r.SaleID, r.ItemID)
	keys := []string{k.Stock(), k.Buyers(), k.Holds(), k.Orders(), k.Released(r.OrderID)}
	if r.ForgetKey != "" {
		keys = append(keys, k.Idem(r.ForgetUser, r.ForgetKey))
	}
	n, err := s.release.Run(ctx, s.rdb, keys, r.OrderID.String(), r.Status, s.markerTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("release order %s: %w", r.OrderID, err)
	}
	return n == 1, nil
}

// SetOrderRef records which sale, item and user an order belongs to, for lookups by order id.
func (s *Store) SetOrderRef(ctx context.Context, orderID uuid.UUID, saleID, itemID, userID string) error {
	return s.rdb.Set(ctx, OrderRefKey(orderID), saleID+"\n"+itemID+"\n"+userID, s.markerTTL).Err()
}

// OrderState is what Redis knows of an order that PostgreSQL may not have yet.
type OrderState struct {
	SaleID, ItemID, UserID string
	// Status is PENDING while the hold is live, or the final status the release recorded.
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
	parts := strings.SplitN(ref, "\n", 3)
	if len(parts) != 3 {
		return OrderState{}, false, fmt.Errorf("order %s: malformed reference %q", orderID, ref)
	}
	k := ItemKeys(parts[0], parts[1])
	pipe := s.rdb.Pipeline()
	held := pipe.HExists(ctx, k.Orders(), orderID.String())
	marker := pipe.Get(ctx, k.Released(orderID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return OrderState{}, false, fmt.Errorf("look up order %s: %w", orderID, err)
	}
	st = OrderState{SaleID: parts[0], ItemID: parts[1], UserID: parts[2]}
	switch {
	case held.Val():
		st.Status = "PENDING"
	case marker.Val() != "":
		st.Status = marker.Val()
	default:
		return OrderState{}, false, nil
	}
	return st, true, nil
}

// PreloadAction says what Preload did to an item's stock counter.
type PreloadAction string

// What Preload can do to a counter.
const (
	// Loaded: the counter did not exist and was created.
	Loaded PreloadAction = "loaded"
	// Kept: the counter existed and the quantity is unchanged; it was left alone.
	Kept PreloadAction = "kept"
	// Adjusted: the quantity changed and the counter moved by the same delta.
	Adjusted PreloadAction = "adjusted"
)

// Preload writes a sale's settings to every item and makes each stock counter match the item's
// quantity without ever overwriting a live counter (that would lose or invent units): a missing
// counter is loaded with remaining[item] (quantity minus what PostgreSQL already counts as sold;
// the full quantity when absent), and an existing one moves by exactly the change in quantity.
// Lowering a quantity below the units already held or sold is refused.
func (s *Store) Preload(ctx context.Context, sl sale.Sale, remaining map[string]int64) (map[string]PreloadAction, error) {
	paused := "0"
	if sl.Paused {
		paused = "1"
	}
	out := make(map[string]PreloadAction, len(sl.Items))
	for _, it := range sl.Items {
		k := ItemKeys(sl.ID, it.ID)
		n, ok := remaining[it.ID]
		if !ok {
			n = it.Quantity
		}
		res, err := s.preload.Run(ctx, s.rdb, []string{k.Meta(), k.Stock()},
			sl.OpensAt.UnixMilli(), paused, sl.PerUserLimit, sl.HoldTTL.Milliseconds(), it.Quantity, n).Text()
		if err != nil {
			return out, fmt.Errorf("preload item %s: %w", it.ID, err)
		}
		action, _, _ := strings.Cut(res, ":")
		out[it.ID] = PreloadAction(action)
	}
	return out, nil
}

// Reset deletes every Redis key of a sale's items: stock, holds, buyers, idempotency records.
// Only for tests, demos and a sale that has not opened.
func (s *Store) Reset(ctx context.Context, sl sale.Sale) error {
	for _, it := range sl.Items {
		pattern := ItemKeys(sl.ID, it.ID).tag + ":*"
		iter := s.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("reset item %s: %w", it.ID, err)
		}
		for i := 0; i < len(batch); i += 500 {
			end := min(i+500, len(batch))
			if err := s.rdb.Del(ctx, batch[i:end]...).Err(); err != nil {
				return fmt.Errorf("reset item %s: %w", it.ID, err)
			}
		}
	}
	return nil
}

// ItemState is a snapshot of one item's counters.
type ItemState struct {
	ItemID string
	Stock  int64
	Holds  int64
	Buyers int64
}

// Snapshot reads the counters of every item of a sale in one round trip. It reads the live
// counters, so the server calls it from its read-model refresher, not per request.
func (s *Store) Snapshot(ctx context.Context, saleID string, itemIDs []string) ([]ItemState, error) {
	pipe := s.rdb.Pipeline()
	type cmds struct {
		stock         *redis.StringCmd
		holds, buyers *redis.IntCmd
	}
	cs := make([]cmds, len(itemIDs))
	for i, id := range itemIDs {
		k := ItemKeys(saleID, id)
		cs[i] = cmds{pipe.Get(ctx, k.Stock()), pipe.ZCard(ctx, k.Holds()), pipe.HLen(ctx, k.Buyers())}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("snapshot sale %s: %w", saleID, err)
	}
	out := make([]ItemState, len(itemIDs))
	for i, id := range itemIDs {
		n, _ := cs[i].stock.Int64()
		out[i] = ItemState{ItemID: id, Stock: n, Holds: cs[i].holds.Val(), Buyers: cs[i].buyers.Val()}
	}
	return out, nil
}
