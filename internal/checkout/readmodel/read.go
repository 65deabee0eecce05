package readmodel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
)

// Read reads the remaining stock of items (every shard's counter summed; units in transit between
// shards are not counted) in one pipelined round trip that starts with Redis's TIME, the
// snapshots' ReadAt: every counter was read at or after it, so ordering snapshots by it never
// lets an older count replace a newer one. On a Redis Cluster, TIME comes from one node; the
// nodes' clocks differ by far less than the pause between two changes of an item's page.
func Read(ctx context.Context, rdb redis.UniversalClient, refs []stock.ItemRef) ([]events.StockSnapshot, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	pipe := rdb.Pipeline()
	now := pipe.Time(ctx)
	cmds := make([][]*redis.StringCmd, len(refs))
	for i, r := range refs {
		cmds[i] = make([]*redis.StringCmd, max(r.Shards, 1))
		for k := range cmds[i] {
			cmds[i][k] = pipe.Get(ctx, stock.ShardKeys(r.SaleID, r.ItemID, k, r.Shards).Stock())
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read stock snapshot: %w", err)
	}
	at, err := now.Result()
	if err != nil {
		return nil, fmt.Errorf("read stock snapshot: redis TIME: %w", err)
	}
	out := make([]events.StockSnapshot, len(refs))
	for i, r := range refs {
		out[i] = events.StockSnapshot{Type: events.TypeStockSnapshot, SaleID: r.SaleID, ItemID: r.ItemID, ReadAt: at.UTC().Truncate(time.Microsecond)}
		for _, c := range cmds[i] {
			n, _ := c.Int64()
			out[i].Remaining += n
		}
	}
	return out, nil
}
