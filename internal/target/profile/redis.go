package profile

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// ShardKeys are the rendered keys of one shard of an item; Buyers and Holds are empty when the
// profile has none.
type ShardKeys struct {
	Shard                     int
	Tag, Stock, Buyers, Holds string
}

// Names are the shard's keys the profile declares: the stock, then buyers and holds if any.
func (k ShardKeys) Names() []string {
	names := []string{k.Stock}
	for _, n := range []string{k.Buyers, k.Holds} {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// Keys renders an item's keys, shard by shard.
func (p *Profile) Keys(sale, item string, shards int) []ShardKeys {
	n := max(shards, 1)
	out := make([]ShardKeys, 0, n)
	for k := range n {
		v := Vars{"sale": sale, "item": item, "shard": strconv.Itoa(k)}
		tmpl := p.Redis.Tag
		if k > 0 {
			tmpl = p.Redis.ShardTag
		}
		v["tag"] = Render(tmpl, v)
		if p.Redis.Spread {
			v["tag"] = redisconn.SpreadTag(v["tag"], k, n)
		}
		key := func(t string) string {
			if t == "" {
				return ""
			}
			return Render(t, v)
		}
		out = append(out, ShardKeys{Shard: k, Tag: v["tag"], Stock: key(p.Redis.Stock), Buyers: key(p.Redis.Buyers), Holds: key(p.Redis.Holds)})
	}
	return out
}

// ShardInventory is what one shard's keys hold.
type ShardInventory struct {
	Keys ShardKeys
	// Stock is the counter; StockSet is false when the key does not exist.
	Stock    int64
	StockSet bool
	// Buyers and Holds count the members of those keys.
	Buyers, Holds int64
	// BuyersType and HoldsType are the keys' Redis types ("none" when missing).
	BuyersType, HoldsType string
}

// Inventory is an item's Redis state summed over its shards.
type Inventory struct {
	Stock, Buyers, Holds int64
	Shards               []ShardInventory
}

// Missing lists the stock keys that do not exist.
func (inv Inventory) Missing() []string {
	var out []string
	for _, s := range inv.Shards {
		if !s.StockSet {
			out = append(out, s.Keys.Stock)
		}
	}
	return out
}

// Stocks reads an item's keys on the target's Redis.
type Stocks struct {
	p   *Profile
	rdb redis.UniversalClient
}

// NewStocks reads p's keys through rdb.
func NewStocks(p *Profile, rdb redis.UniversalClient) *Stocks { return &Stocks{p: p, rdb: rdb} }

// Inventory reads every shard's stock counter and counts its buyers and holds: one pipelined
// round trip for the types and counters, one for the counts.
func (s *Stocks) Inventory(ctx context.Context, sale, item string, shards int) (Inventory, error) {
	keys := s.p.Keys(sale, item, shards)
	pipe := s.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	types := make([][2]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		gets[i] = pipe.Get(ctx, k.Stock)
		if k.Buyers != "" {
			types[i][0] = pipe.Type(ctx, k.Buyers)
		}
		if k.Holds != "" {
			types[i][1] = pipe.Type(ctx, k.Holds)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Inventory{}, fmt.Errorf("redis: read %s's keys: %w", item, err)
	}
	inv := Inventory{Shards: make([]ShardInventory, len(keys))}
	pipe = s.rdb.Pipeline()
	counts := make([][2]*redis.IntCmd, len(keys))
	for i, k := range keys {
		sh := ShardInventory{Keys: k, BuyersType: "none", HoldsType: "none"}
		if v, err := gets[i].Result(); err == nil {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				return Inventory{}, fmt.Errorf("redis: %s holds %q: want an integer", k.Stock, v)
			}
			sh.Stock, sh.StockSet = n, true
		}
		if types[i][0] != nil {
			sh.BuyersType = types[i][0].Val()
			counts[i][0] = count(ctx, pipe, k.Buyers, sh.BuyersType)
		}
		if types[i][1] != nil {
			sh.HoldsType = types[i][1].Val()
			counts[i][1] = count(ctx, pipe, k.Holds, sh.HoldsType)
		}
		inv.Shards[i] = sh
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Inventory{}, fmt.Errorf("redis: count %s's buyers and holds: %w", item, err)
	}
	for i := range inv.Shards {
		sh := &inv.Shards[i]
		if c := counts[i][0]; c != nil {
			sh.Buyers = c.Val()
		}
		if c := counts[i][1]; c != nil {
			sh.Holds = c.Val()
		}
		inv.Stock += sh.Stock
		inv.Buyers += sh.Buyers
		inv.Holds += sh.Holds
	}
	return inv, nil
}

// count queues the member count of a set, hash, sorted set or list.
func count(ctx context.Context, pipe redis.Pipeliner, key, typ string) *redis.IntCmd {
	switch typ {
	case "set":
		return pipe.SCard(ctx, key)
	case "hash":
		return pipe.HLen(ctx, key)
	case "zset":
		return pipe.ZCard(ctx, key)
	case "list":
		return pipe.LLen(ctx, key)
	}
	return nil
}

// Buyers returns who the item's buyers keys record, over every shard, and how many units each
// (a set member is one unit; a hash field's value is its units).
func (s *Stocks) Buyers(ctx context.Context, sale, item string, shards int) (map[string]int64, error) {
	out := map[string]int64{}
	for _, k := range s.p.Keys(sale, item, shards) {
		if k.Buyers == "" {
			continue
		}
		typ, err := s.rdb.Type(ctx, k.Buyers).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: %s: %w", k.Buyers, err)
		}
		switch typ {
		case "set":
			iter := s.rdb.SScan(ctx, k.Buyers, 0, "", 1000).Iterator()
			for iter.Next(ctx) {
				out[iter.Val()]++
			}
			err = iter.Err()
		case "hash":
			var m map[string]string
			if m, err = s.rdb.HGetAll(ctx, k.Buyers).Result(); err == nil {
				for u, v := range m {
					n, _ := strconv.ParseInt(v, 10, 64)
					out[u] += max(n, 1)
				}
			}
		case "none":
		default:
			err = fmt.Errorf("is a %s: want a set or a hash of buyers", typ)
		}
		if err != nil {
			return nil, fmt.Errorf("redis: %s: %w", k.Buyers, err)
		}
	}
	return out, nil
}

// setIfEqual moves a counter only from the value the caller saw, so a reserve that ran since is
// never overwritten.
var setIfEqual = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`)

// SetStock sets a stock counter from one value to another; false when it no longer held from.
func (s *Stocks) SetStock(ctx context.Context, key string, from, to int64) (bool, error) {
	n, err := setIfEqual.Run(ctx, s.rdb, []string{key}, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)).Int()
	if err != nil {
		return false, fmt.Errorf("redis: set %s: %w", key, err)
	}
	return n == 1, nil
}

// AddBuyer records a buyer in a buyers set (or hash, with one unit).
func (s *Stocks) AddBuyer(ctx context.Context, key, user string) error {
	typ, err := s.rdb.Type(ctx, key).Result()
	if err == nil {
		if typ == "hash" {
			err = s.rdb.HIncrBy(ctx, key, user, 1).Err()
		} else {
			err = s.rdb.SAdd(ctx, key, user).Err()
		}
	}
	if err != nil {
		return fmt.Errorf("redis: add %s to %s: %w", user, key, err)
	}
	return nil
}

// RemoveBuyer removes a buyer from a buyers set or hash.
func (s *Stocks) RemoveBuyer(ctx context.Context, key, user string) error {
	typ, err := s.rdb.Type(ctx, key).Result()
	if err == nil {
		if typ == "hash" {
			err = s.rdb.HDel(ctx, key, user).Err()
		} else {
			err = s.rdb.SRem(ctx, key, user).Err()
		}
	}
	if err != nil {
		return fmt.Errorf("redis: remove %s from %s: %w", user, key, err)
	}
	return nil
}
