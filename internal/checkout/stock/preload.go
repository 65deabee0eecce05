package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// PreloadAction says what Preload did to an item's stock counters.
type PreloadAction string

// What Preload can do to a counter.
const (
	// Loaded: the counters did not exist and were created.
	Loaded PreloadAction = "loaded"
	// Kept: the counters existed and the quantity is unchanged; they were left alone.
	Kept PreloadAction = "kept"
	// Adjusted: the quantity changed and the counters moved by the same delta.
	Adjusted PreloadAction = "adjusted"
)

// split is shard k's share of q units over n shards: q/n, plus one for the first q%n shards.
func split(q int64, n, k int) int64 {
	share := q / int64(n)
	if int64(k) < q%int64(n) {
		share++
	}
	return share
}

// Preload writes a sale's settings to every shard of every item and makes each stock counter match
// its share of the item's quantity without ever overwriting a live counter (that would lose or
// invent units): a missing counter is loaded with its share of remaining[item] (quantity minus what
// PostgreSQL already counts as sold; the full quantity when absent), and an existing one moves by
// exactly the change in its share. Lowering a quantity below the units already held or sold is
// refused, and so is changing the shard count of an item whose counters exist (reset it first).
func (s *Store) Preload(ctx context.Context, sl sale.Sale, remaining map[string]int64) (map[string]PreloadAction, error) {
	out := make(map[string]PreloadAction, len(sl.Items))
	for _, it := range sl.Items {
		n := it.ShardCount()
		if err := s.checkPreload(ctx, sl.ID, it); err != nil {
			return out, fmt.Errorf("preload item %s: %w", it.ID, err)
		}
		left, ok := remaining[it.ID]
		if !ok {
			left = it.Quantity
		}
		action := Kept
		for k := range n {
			keys := ShardKeys(sl.ID, it.ID, k, n)
			res, err := s.preload.Run(ctx, s.rdb, []string{keys.Meta(), keys.Stock()}, shardArgs(sl, it, k, left)...).Text()
			if err != nil {
				return out, fmt.Errorf("preload item %s shard %d: %w", it.ID, k, err)
			}
			switch a, _, _ := strings.Cut(res, ":"); PreloadAction(a) {
			case Adjusted:
				action = Adjusted
			case Loaded:
				if action == Kept {
					action = Loaded
				}
			}
		}
		if err := s.markLayout(ctx, sl.ID, it); err != nil {
			return out, fmt.Errorf("preload item %s: %w", it.ID, err)
		}
		out[it.ID] = action
	}
	return out, nil
}

// markLayout records a sharded item's shard count at the item's unsalted key ({fs:<sale>:<item>}:meta,
// an unsharded item's own meta), the one place that does not move with the shard count, so a later
// preload with another count is refused instead of loading a second set of shards beside the first.
func (s *Store) markLayout(ctx context.Context, saleID string, it sale.Item) error {
	if it.ShardCount() <= 1 {
		return nil // its meta is the marker, written by the script
	}
	return s.rdb.HSet(ctx, ItemKeys(saleID, it.ID).Meta(), "shards", it.ShardCount()).Err()
}

// Reload overwrites every shard of every item of a sale, each in one atomic step: its counter is set
// to its share of remaining[item] (quantity minus what PostgreSQL counts sold) and its holds, buyer
// records, orders and transfer ledger are dropped. It is the rebuild's load, after Redis lost the
// sale's state: unlike Preload it keeps no counter it finds, because whatever a release or a
// transfer wrote back while the old state was being wiped is not to be trusted. The caller then
// restores every live order (RestoreOrder).
func (s *Store) Reload(ctx context.Context, sl sale.Sale, remaining map[string]int64) error {
	for _, it := range sl.Items {
		for k := range it.ShardCount() {
			keys := ShardKeys(sl.ID, it.ID, k, it.ShardCount())
			err := s.reload.Run(ctx, s.rdb, []string{keys.Meta(), keys.Stock(), keys.Buyers(), keys.Holds(),
				keys.Orders(), keys.Ledger(), keys.Applied()}, shardArgs(sl, it, k, remaining[it.ID])...).Err()
			if err != nil {
				return fmt.Errorf("reload item %s shard %d: %w", it.ID, k, err)
			}
		}
		if err := s.markLayout(ctx, sl.ID, it); err != nil {
			return fmt.Errorf("reload item %s: %w", it.ID, err)
		}
	}
	return nil
}

// shardArgs are the ARGV that preload.lua and reload.lua share: the sale's settings, shard k's
// share of the item's quantity and of left, the shard count and the item's epoch. sl must come
// from PostgreSQL (orders.LoadSale), or carry its epochs: a shard loaded with an older epoch than
// PostgreSQL's would stamp every reservation stale.
func shardArgs(sl sale.Sale, it sale.Item, k int, left int64) []any {
	paused := "0"
	if sl.Paused {
		paused = "1"
	}
	n := it.ShardCount()
	return []any{sl.OpensAt.UnixMilli(), paused, sl.PerUserLimit, sl.HoldTTL.Milliseconds(),
		split(it.Quantity, n, k), split(left, n, k), n, it.Epoch}
}

// checkPreload refuses, before anything is written, a preload the scripts would refuse part-way
// through a sharded item: a changed shard count, or a lowered quantity some shard cannot give up.
// The scripts check again atomically; this only keeps a refusal from leaving some shards adjusted.
func (s *Store) checkPreload(ctx context.Context, saleID string, it sale.Item) error {
	n := it.ShardCount()
	pipe := s.rdb.Pipeline()
	layout := pipe.HGet(ctx, ItemKeys(saleID, it.ID).Meta(), "shards")
	metas := make([]*redis.SliceCmd, n)
	stocks := make([]*redis.StringCmd, n)
	for k := range n {
		keys := ShardKeys(saleID, it.ID, k, n)
		metas[k] = pipe.HMGet(ctx, keys.Meta(), "quantity", "shards")
		stocks[k] = pipe.Get(ctx, keys.Stock())
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if olds, err := layout.Int(); err == nil && olds != n {
		return fmt.Errorf("SHARDS_CHANGED the item has %d shards in Redis and %d in the sale; reset the item first", olds, n)
	}
	var oldTotal, left int64
	short := -1
	for k := range n {
		cur, err := stocks[k].Int64()
		if err != nil {
			continue // no counter: this shard will be loaded
		}
		vals := metas[k].Val()
		if olds := metaInt(vals[1], 1); olds != int64(n) {
			return fmt.Errorf("SHARDS_CHANGED the item has %d shards in Redis and %d in the sale; reset the item first", olds, n)
		}
		oldq := metaInt(vals[0], -1)
		if oldq < 0 {
			continue
		}
		oldTotal, left = oldTotal+oldq, left+cur
		if cur+split(it.Quantity, n, k)-oldq < 0 && short < 0 {
			short = k
		}
	}
	switch taken := oldTotal - left; {
	case short < 0:
		return nil
	case it.Quantity < taken:
		return fmt.Errorf("QUANTITY_BELOW_TAKEN quantity %d is below the %d units already held or sold", it.Quantity, taken)
	default:
		return fmt.Errorf("QUANTITY_BELOW_TAKEN shard %d has fewer units left than its share of quantity %d would take away; lower the quantity less, or reset the item", short, it.Quantity)
	}
}

// metaInt reads an HMGET field as an integer, def when it is missing or not a number.
func metaInt(v any, def int64) int64 {
	str, ok := v.(string)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(str, 10, 64)
	if err != nil {
		return def
	}
	return n
}

// Reset deletes every Redis key of every shard of a sale's items: stock, holds, buyers,
// idempotency records, ledgers. Only for tests, demos and a sale that has not opened.
func (s *Store) Reset(ctx context.Context, sl sale.Sale) error { return s.reset(ctx, sl, false) }

// Wipe is Reset for a rebuild of a sale under way: every key goes but the orders' final-status
// markers (Keys.Released), which expire on their own. They tell the consumer that an OrderPlaced
// still in the log is a hand-off the server saw fail; wiped, such an event would become an order
// after the rebuild's snapshot and count its unit twice.
func (s *Store) Wipe(ctx context.Context, sl sale.Sale) error { return s.reset(ctx, sl, true) }

func (s *Store) reset(ctx context.Context, sl sale.Sale, keepMarkers bool) error {
	for _, it := range sl.Items {
		// One scan per item finds every shard, whatever the shard count was: "{fs:<sale>:<item>}:...",
		// "{fs:<sale>:<item>:<k>}:..." and "{fs:<sale>:<item>:<k>~<salt>}:...". Ids are slugs, so
		// "[}:~]" after the item id cannot match another item's keys.
		pattern := "{fs:" + sl.ID + ":" + it.ID + "[}:~]*"
		var batch []string
		if err := redisconn.Scan(ctx, s.rdb, pattern, 1000, func(key string) {
			if !keepMarkers || !strings.Contains(key, releasedInfix) {
				batch = append(batch, key)
			}
		}); err != nil {
			return fmt.Errorf("reset item %s: %w", it.ID, err)
		}
		// The references of the item's live orders are keyed by order id, outside the hash tags.
		for k := range it.ShardCount() {
			ids, err := s.rdb.HKeys(ctx, ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Orders()).Result()
			if err != nil {
				return fmt.Errorf("reset item %s: %w", it.ID, err)
			}
			for _, id := range ids {
				batch = append(batch, orderRefPrefix+id)
			}
		}
		for i := 0; i < len(batch); i += 500 {
			end := min(i+500, len(batch))
			// One DEL per key: on a Redis Cluster the shards' keys live in different slots.
			pipe := s.rdb.Pipeline()
			for _, key := range batch[i:end] {
				pipe.Del(ctx, key)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("reset item %s: %w", it.ID, err)
			}
		}
	}
	return s.dropClaims(ctx, sl)
}

// SetPaused sets the pause flag in the meta of every shard of every item of a sale; the reserve
// script reads it on every call, so every server instance honours it at once.
func (s *Store) SetPaused(ctx context.Context, sl sale.Sale, paused bool) error {
	flag := "0"
	if paused {
		flag = "1"
	}
	pipe := s.rdb.Pipeline()
	for _, it := range sl.Items {
		for k := range it.ShardCount() {
			pipe.HSet(ctx, ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Meta(), "paused", flag)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("set paused=%v on sale %s: %w", paused, sl.ID, err)
	}
	return nil
}
