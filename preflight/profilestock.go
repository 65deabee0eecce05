package preflight

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/profile"
)

// foreignStock: through the profile's key templates, every item's stock counters exist, hold
// integers >= 0 and add up to quantity − live orders; each shard's keys share one hash slot; the
// buyers keys are sets or hashes.
func foreignStock(ctx context.Context, e *env) []Result {
	switch {
	case e.rdb == nil || e.pdb == nil:
		return needs("stock", "Redis", "PostgreSQL")
	case len(e.items) == 0:
		return needs("stock", "the items (sql.items)")
	}
	lag := e.orderLag(ctx)
	var out []Result
	for _, item := range e.items {
		out = append(out, itemCounters(ctx, e, item, lag)...)
	}
	return out
}

// itemCounters checks one item's counters, then the slots of its keys.
func itemCounters(ctx context.Context, e *env, item string, lag int64) []Result {
	r := Result{Group: "stock", Check: "stock " + item}
	sale := e.cfg.SaleID
	row, err := e.pdb.Item(ctx, sale, item)
	var shards int
	var live int64
	if err == nil {
		shards, err = e.pdb.Shards(ctx, sale, item)
	}
	if err == nil {
		live, err = e.pdb.Live(ctx, sale, item)
	}
	if err != nil {
		r.Status, r.Detail, r.Fix = Fail, err.Error(), "see the profile group: the item's queries must run first"
		return []Result{r}
	}
	inv, err := e.stocks.Inventory(ctx, sale, item, shards)
	if err != nil {
		r.Status, r.Detail = Fail, err.Error()
		r.Fix = "the stock key must hold an integer: correct redis.stock in the profile, or the counter (" + noFix + ")"
		return []Result{r}
	}
	want := row.Quantity - live
	r.Detail = fmt.Sprintf("redis %d on %d shard(s), expected %d = quantity %d − live orders %d; buyers %d, holds %d",
		inv.Stock, shards, want, row.Quantity, live, inv.Buyers, inv.Holds)
	var problems []string
	missing := inv.Missing()
	if len(missing) > 0 {
		problems = append(problems, "no stock counter "+strings.Join(missing, ", "))
	}
	buyerKeys := 0
	for _, sh := range inv.Shards {
		if sh.StockSet && sh.Stock < 0 {
			problems = append(problems, fmt.Sprintf("%s holds %d: want >= 0", sh.Keys.Stock, sh.Stock))
		}
		switch sh.BuyersType {
		case "set", "hash":
			buyerKeys++
		case "none":
		default:
			problems = append(problems, fmt.Sprintf("%s is a %s: want a set or a hash of buyers", sh.Keys.Buyers, sh.BuyersType))
		}
	}
	if e.prof.Redis.Buyers != "" && buyerKeys == 0 && live > 0 {
		problems = append(problems, fmt.Sprintf("no buyers key, but %d live order(s)", live))
	}
	drift := inv.Stock != want
	switch {
	case len(problems) == 0 && !drift:
		r.Status = Pass
	case len(problems) == 0 && lag > 0:
		// The consumer has not written every order yet: Redis is ahead of PostgreSQL.
		r.Status = Warn
		r.Detail = fmt.Sprintf("off by %d with %d order(s) still in Kafka (%s)", inv.Stock-want, lag, r.Detail)
		r.Fix = "run again once the order consumer has drained"
	default:
		r.Status = Fail
		if drift {
			problems = append(problems, fmt.Sprintf("redis holds %d, expected %d (off by %+d)", inv.Stock, want, inv.Stock-want))
		}
		r.Detail = strings.Join(problems, "; ") + " (" + r.Detail + ")"
		r.Fix = "find where the units went before the sale (" + noFix + ")"
		if len(missing) > 0 {
			recountMissing(e, &r, item, shards, missing)
		}
	}
	return []Result{r, profileSlots(e, item, inv.Shards)}
}

// recountMissing offers the repair the profile declares for a missing counter: fix.stock
// recount sets an unsharded item's counter to quantity − live, and only where no counter exists,
// so it never overwrites one a purchase is moving.
func recountMissing(e *env, r *Result, item string, shards int, missing []string) {
	switch {
	case e.prof.Fix.Stock != profile.Recount:
		r.Fix = "preload the counter as the target does (" + noFix + ")"
		return
	case shards > 1:
		r.Fix = "preload the shards' counters as the target does (" + noFix + ": fix.stock recount covers unsharded items only)"
		return
	}
	key := missing[0]
	r.Fix = "fsctl preflight --fix sets it to quantity − live orders (fix.stock: recount)"
	r.Repair = fmt.Sprintf("recount item %s: SET %s NX to quantity − live orders", item, key)
	r.repair = func(ctx context.Context) error {
		row, err := e.pdb.Item(ctx, e.cfg.SaleID, item)
		if err != nil {
			return err
		}
		live, err := e.pdb.Live(ctx, e.cfg.SaleID, item)
		if err != nil {
			return err
		}
		return setMissing(ctx, e.rdb, key, row.Quantity-live)
	}
}

// setMissing writes a counter only if it does not exist (SETNX): a counter that appeared since
// the check is the target's and stays.
func setMissing(ctx context.Context, rdb *redis.Client, key string, n int64) error {
	set, err := rdb.SetNX(ctx, key, strconv.FormatInt(n, 10), 0).Result()
	if err != nil {
		return fmt.Errorf("redis: set %s: %w", key, err)
	}
	if !set {
		return fmt.Errorf("redis: %s appeared since the check: left as it is", key)
	}
	return nil
}

// profileSlots checks that the keys of one shard hash to one slot, so a Lua script can touch
// them all on a Redis Cluster.
func profileSlots(e *env, item string, shards []profile.ShardInventory) Result {
	r := Result{Group: "stock", Check: "hash slots " + item, Status: Pass}
	var slots []string
	for _, sh := range shards {
		slot, n, s, ok := profile.SharedSlot(sh.Keys.Names())
		if !ok {
			r.Status = Fail
			r.Detail = fmt.Sprintf("shard %d: %s is in slot %d, %s in slot %d", sh.Keys.Shard, sh.Keys.Stock, slot, n, s)
			r.Fix = "give every key of a shard one hash tag (${tag} in redis.stock, buyers and holds of " + e.prof.Source() + ")"
			return r
		}
		slots = append(slots, strconv.Itoa(slot))
	}
	r.Detail = "each shard's keys share one slot: " + strings.Join(slots, ", ")
	return r
}
