package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// transfer is one ledger entry: units taken out of shard From on their way to shard To.
type transfer struct {
	ID       string
	From, To int
	Units    int64
	At       time.Time
}

// parseLedger reads a shard's ledger hash (transferId -> "toShard\ncount\nms").
func parseLedger(from int, entries map[string]string) ([]transfer, error) {
	out := make([]transfer, 0, len(entries))
	for id, v := range entries {
		parts := strings.Split(v, "\n")
		if len(parts) != 3 {
			return nil, fmt.Errorf("ledger of shard %d: malformed entry %s = %q", from, id, v)
		}
		to, err1 := strconv.Atoi(parts[0])
		n, err2 := strconv.ParseInt(parts[1], 10, 64)
		ms, err3 := strconv.ParseInt(parts[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("ledger of shard %d: entry %s = %q: %w", from, id, v, err)
		}
		out = append(out, transfer{ID: id, From: from, To: to, Units: n, At: time.UnixMilli(ms)})
	}
	return out, nil
}

// ShardState is one shard's counters.
type ShardState struct {
	Shard  int
	Stock  int64
	Holds  int64
	Buyers int64
	// InTransit is the units taken out of this shard that their target shard has not applied yet
	// (a transfer cut short by a crash; RepairTransfers moves them).
	InTransit int64
}

// ItemState is a snapshot of one item's counters, summed over its shards.
type ItemState struct {
	ItemID string
	// Stock is the units on sale: every shard's counter plus the units in transit between shards.
	Stock  int64
	Holds  int64
	Buyers int64
	Shards []ShardState
}

// Snapshot reads the counters of the given items of a sale in at most two pipelined round trips
// (the second only when some ledger holds entries, to learn which of them were applied). It reads
// live counters on different hash tags, so under traffic the sum is close rather than exact; the
// server calls it from its read-model refresher, not per request.
func (s *Store) Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]ItemState, error) {
	type cmds struct {
		stock         *redis.StringCmd
		holds, buyers *redis.IntCmd
		ledger        *redis.MapStringStringCmd
	}
	pipe := s.rdb.Pipeline()
	cs := make([][]cmds, len(items))
	for i, it := range items {
		cs[i] = make([]cmds, it.ShardCount())
		for k := range cs[i] {
			keys := ShardKeys(saleID, it.ID, k, len(cs[i]))
			cs[i][k] = cmds{pipe.Get(ctx, keys.Stock()), pipe.ZCard(ctx, keys.Holds()), pipe.HLen(ctx, keys.Buyers()),
				pipe.HGetAll(ctx, keys.Ledger())}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("snapshot sale %s: %w", saleID, err)
	}

	out := make([]ItemState, len(items))
	type pending struct {
		item int
		t    transfer
		cmd  *redis.BoolSliceCmd
	}
	var checks []pending
	applied := s.rdb.Pipeline()
	for i, it := range items {
		st := ItemState{ItemID: it.ID, Shards: make([]ShardState, len(cs[i]))}
		for k, c := range cs[i] {
			n, _ := c.stock.Int64()
			st.Shards[k] = ShardState{Shard: k, Stock: n, Holds: c.holds.Val(), Buyers: c.buyers.Val()}
			st.Stock, st.Holds, st.Buyers = st.Stock+n, st.Holds+c.holds.Val(), st.Buyers+c.buyers.Val()
			ts, err := parseLedger(k, c.ledger.Val())
			if err != nil {
				return nil, fmt.Errorf("snapshot %s/%s: %w", saleID, it.ID, err)
			}
			for _, t := range ts {
				cmd := applied.SMIsMember(ctx, ShardKeys(saleID, it.ID, t.To, len(cs[i])).Applied(), t.ID)
				checks = append(checks, pending{i, t, cmd})
			}
		}
		out[i] = st
	}
	if len(checks) == 0 {
		return out, nil
	}
	if _, err := applied.Exec(ctx); err != nil {
		return nil, fmt.Errorf("snapshot sale %s: %w", saleID, err)
	}
	for _, p := range checks {
		if in := p.cmd.Val(); len(in) == 1 && !in[0] {
			out[p.item].Shards[p.t.From].InTransit += p.t.Units
			out[p.item].Stock += p.t.Units
		}
	}
	return out, nil
}

// ItemRef names an item and its shard count for Remaining.
type ItemRef struct {
	SaleID, ItemID string
	Shards         int
}

// Remaining reads the summed stock counters of several items in one pipelined round trip (units in
// transit between shards are not counted). A server polls it to learn when a sold-out item has
// stock again.
func (s *Store) Remaining(ctx context.Context, refs []ItemRef) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([][]*redis.StringCmd, len(refs))
	for i, r := range refs {
		cmds[i] = make([]*redis.StringCmd, max(r.Shards, 1))
		for k := range cmds[i] {
			cmds[i][k] = pipe.Get(ctx, ShardKeys(r.SaleID, r.ItemID, k, r.Shards).Stock())
		}
	}
	if len(refs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read remaining stock: %w", err)
		}
	}
	out := make([]int64, len(refs))
	for i := range cmds {
		for _, c := range cmds[i] {
			n, _ := c.Int64()
			out[i] += n
		}
	}
	return out, nil
}

// RepairTransfers finishes the transfers of an item that a crash cut short: every ledger entry older
// than olderThan is applied into its target shard (exactly once: a transfer its reserve already
// applied adds nothing) and deleted. It returns the units it moved. olderThan keeps it clear of
// transfers a live reserve is about to apply; a second or so is plenty.
func (s *Store) RepairTransfers(ctx context.Context, saleID, itemID string, shards int, olderThan time.Duration) (int, error) {
	n := max(shards, 1)
	pipe := s.rdb.Pipeline()
	now := pipe.Time(ctx)
	ledgers := make([]*redis.MapStringStringCmd, n)
	for k := range n {
		ledgers[k] = pipe.HGetAll(ctx, ShardKeys(saleID, itemID, k, n).Ledger())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("repair transfers of %s/%s: %w", saleID, itemID, err)
	}
	cutoff := now.Val().Add(-olderThan)
	moved := 0
	for k, l := range ledgers {
		ts, err := parseLedger(k, l.Val())
		if err != nil {
			return moved, fmt.Errorf("repair transfers of %s/%s: %w", saleID, itemID, err)
		}
		for _, t := range ts {
			if t.At.After(cutoff) {
				continue
			}
			to := ShardKeys(saleID, itemID, t.To, n)
			added, err := s.applyTransfer.Run(ctx, s.rdb, []string{to.Applied(), to.Stock()}, t.ID, t.Units).Int()
			if err != nil {
				return moved, fmt.Errorf("apply transfer %s of %s/%s: %w", t.ID, saleID, itemID, err)
			}
			moved += added
			if err := s.rdb.HDel(ctx, ShardKeys(saleID, itemID, k, n).Ledger(), t.ID).Err(); err != nil {
				return moved, fmt.Errorf("delete transfer %s of %s/%s: %w", t.ID, saleID, itemID, err)
			}
		}
	}
	return moved, nil
}
