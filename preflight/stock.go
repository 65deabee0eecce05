package preflight

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
)

// checkStock: every item's counters exist on every shard, agree with PostgreSQL (quantity − sold,
// less the holds still on their way there), and each shard's keys share one hash slot.
func checkStock(ctx context.Context, e *env) []Result {
	switch {
	case e.foreign():
		return foreignStock(ctx, e)
	case e.rdb == nil || e.db == nil:
		return needs("stock", "Redis", "PostgreSQL")
	case e.sale == nil:
		return needs("stock", "the sale")
	}
	sl := *e.sale
	st := e.stock()
	reports, err := reconcile.Sale(ctx, st, e.db, sl)
	if err != nil {
		return []Result{{Group: "stock", Check: "stock", Status: Fail, Detail: err.Error()}}
	}
	missing, err := missingCounters(ctx, e.rdb, sl)
	if err != nil {
		return []Result{{Group: "stock", Check: "stock", Status: Fail, Detail: err.Error()}}
	}
	pristine := true
	for _, r := range reports {
		c := r.Counts
		pristine = pristine && r.Holds == 0 && c.Sold == 0 && c.Pending+c.Paid+c.Expired+c.Cancelled+c.Failed == 0
	}
	var out []Result
	for i, r := range reports {
		it := sl.Items[i]
		out = append(out, itemStock(e, sl, it, r, missing[it.ID], pristine), itemSlots(sl.ID, it))
	}
	return out
}

// missingCounters lists, per item, the shards whose stock counter does not exist.
func missingCounters(ctx context.Context, rdb redis.UniversalClient, sl sale.Sale) (map[string][]int, error) {
	pipe := rdb.Pipeline()
	type probe struct {
		item  string
		shard int
		cmd   *redis.IntCmd
	}
	var probes []probe
	for _, it := range sl.Items {
		for k := range it.ShardCount() {
			probes = append(probes, probe{it.ID, k, pipe.Exists(ctx, stock.ShardKeys(sl.ID, it.ID, k).Stock())})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read stock counters: %w", err)
	}
	out := map[string][]int{}
	for _, p := range probes {
		if p.cmd.Val() == 0 {
			out[p.item] = append(out[p.item], p.shard)
		}
	}
	return out, nil
}

func itemStock(e *env, sl sale.Sale, it sale.Item, r reconcile.ItemReport, missing []int, pristine bool) Result {
	c := r.Counts
	res := Result{Group: "stock", Check: "stock " + it.ID}
	inFlight := r.Holds - c.Pending
	want := r.Quantity - c.Sold - inFlight
	res.Detail = fmt.Sprintf("redis %d on %d shard(s), expected %d = quantity %d − sold %d − in flight %d; holds %d, buyers %d",
		r.Stock, it.ShardCount(), want, r.Quantity, c.Sold, inFlight, r.Holds, buyers(r))
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("no stock counter on shard(s) %v", missing))
	}
	problems = append(problems, r.Problems...)
	if r.Holds > buyers(r)*int64(sl.PerUserLimit) {
		problems = append(problems, fmt.Sprintf("%d holds but only %d buyer records", r.Holds, buyers(r)))
	}
	if len(problems) == 0 {
		res.Status = Pass
		return res
	}
	res.Status = Fail
	res.Detail = strings.Join(problems, "; ") + " (" + res.Detail + ")"
	one := sl
	one.Items = []sale.Item{it}
	remaining := map[string]int64{it.ID: r.Quantity - c.Sold}
	switch {
	case len(missing) > 0:
		// Preload never overwrites a counter that exists, so loading the missing ones is safe.
		res.Fix = "fsctl preflight --fix (or fsctl sale create -f SALE.yaml) preloads the missing counters"
		res.Repair = fmt.Sprintf("preload item %s: shard(s) %v get their share of %d units", it.ID, missing, r.Quantity-c.Sold)
		res.repair = func(ctx context.Context) error {
			_, err := e.stock().Preload(ctx, one, remaining)
			return err
		}
	case pristine:
		// Nothing was ever reserved or recorded, so the counters can be rebuilt from PostgreSQL.
		res.Fix = "nothing sold yet: fsctl preflight --fix reloads the item from PostgreSQL"
		res.Repair = fmt.Sprintf("reset and preload item %s with %d units (nothing sold yet)", it.ID, r.Quantity)
		res.repair = func(ctx context.Context) error {
			if err := e.stock().Reset(ctx, one); err != nil {
				return err
			}
			_, err := e.stock().Preload(ctx, one, remaining)
			return err
		}
	default:
		res.Fix = "units were already taken, so preflight will not rewrite live counters: fsctl reconcile --sale " + sl.ID + " (--fix)"
	}
	return res
}

func buyers(r reconcile.ItemReport) int64 {
	var n int64
	for _, sh := range r.Shards {
		n += sh.Buyers
	}
	return n
}

// itemSlots checks that every key a script touches on one shard hashes to one slot, so the
// scripts run on a Redis Cluster.
func itemSlots(saleID string, it sale.Item) Result {
	res := Result{Group: "stock", Check: "hash slots " + it.ID, Status: Pass}
	var slots []string
	for k := range it.ShardCount() {
		names := shardKeyNames(stock.ShardKeys(saleID, it.ID, k))
		slot, n, s, ok := profile.SharedSlot(names)
		if !ok {
			res.Status = Fail
			res.Detail = fmt.Sprintf("shard %d: %s is in slot %d, %s in slot %d", k, names[0], slot, n, s)
			res.Fix = "the key scheme lost its hash tag: this fsctl build is broken, report it"
			return res
		}
		slots = append(slots, fmt.Sprint(slot))
	}
	res.Detail = fmt.Sprintf("%d keys per shard share one slot: %s", len(shardKeyNames(stock.ItemKeys(saleID, it.ID))),
		strings.Join(slots, ", "))
	return res
}

// shardKeyNames are the keys the scripts touch on one shard.
func shardKeyNames(keys stock.Keys) []string {
	return []string{keys.Meta(), keys.Stock(), keys.Buyers(), keys.Holds(), keys.Orders(), keys.Ledger(),
		keys.Applied(), keys.TransferSeq(), keys.Idem("user", "key"), keys.Released(uuid.Nil)}
}
