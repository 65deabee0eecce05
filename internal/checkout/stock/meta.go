package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// ShardMeta is what one shard's meta says about its state: whether it is loaded at all, the
// operator's pause flag the reserve script reads, and the epoch it was loaded with.
type ShardMeta struct {
	Shard  int
	Loaded bool
	Paused bool
	Epoch  int64
}

// Metas reads the meta of every shard of the given items of a sale in one pipelined round trip:
// out[i] holds items[i]'s shards. A shard without a meta (never loaded, lost, or being rebuilt)
// reads as not loaded.
func (s *Store) Metas(ctx context.Context, saleID string, items []sale.Item) ([][]ShardMeta, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([][]*redis.SliceCmd, len(items))
	for i, it := range items {
		for k := range it.ShardCount() {
			cmds[i] = append(cmds[i], pipe.HMGet(ctx, ShardKeys(saleID, it.ID, k, it.ShardCount()).Meta(), "opens_at_ms", "paused", "epoch"))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the meta of sale %s: %w", saleID, err)
	}
	out := make([][]ShardMeta, len(items))
	for i, it := range items {
		for k, c := range cmds[i] {
			v := c.Val()
			m := ShardMeta{Shard: k, Loaded: len(v) == 3 && v[0] != nil}
			if m.Loaded {
				m.Paused = v[1] == "1"
				if str, ok := v[2].(string); ok {
					epoch, err := strconv.ParseInt(str, 10, 64)
					if err != nil {
						return nil, fmt.Errorf("epoch of %s/%s shard %d is %q: %w", saleID, it.ID, k, str, err)
					}
					m.Epoch = epoch
				}
			}
			out[i] = append(out[i], m)
		}
	}
	return out, nil
}
