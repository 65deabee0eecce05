package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/reconcile"
)

// checkStock: through the profile, every item's counters exist on every shard and add up to what
// the source of truth leaves on sale, and each shard's keys share one hash slot. fsctl serve's
// items are held against its sale definition instead (holds in flight, every invariant reconcile
// knows) and repaired by preloading them.
func checkStock(ctx context.Context, e *env) []finding.Finding {
	switch {
	case e.target == nil:
		return needs("stock", "Redis", "PostgreSQL")
	case len(e.items) == 0:
		return needs("stock", "the sale's items (sql.items)")
	}
	var l *ledger
	if e.bundled != nil && e.bundled.sale != nil {
		var err error
		if l, err = newLedger(ctx, e, *e.bundled.sale); err != nil {
			return []finding.Finding{{Group: "stock", Check: "stock", Status: finding.Fail, Detail: err.Error()}}
		}
	}
	lag := e.orderLag(ctx)
	var out []finding.Finding
	for _, item := range e.items {
		out = append(out, itemStock(ctx, e, item, lag, l)...)
	}
	return out
}

// account is what one item's counters are held against.
type account struct {
	// redis is what the counters hold in all; want what they should.
	redis, want int64
	// terms say how want is made ("quantity 5 − live orders 1"), counts what the other keys hold.
	terms, counts string
	// problems fail the item; settling, when there are none, is a difference the order log's
	// lag explains (a warning).
	problems []string
	settling string
	// fix says what to do about a failure; repair, when set, is what --fix does (Repair says it).
	fix, repairText string
	repair          func(context.Context) error
}

// itemStock reads one item through the profile, holds it against its account and checks the
// slots of its keys.
func itemStock(ctx context.Context, e *env, item string, lag int64, l *ledger) []finding.Finding {
	st, err := e.target.State(ctx, e.cfg.SaleID, item)
	if err != nil {
		r := finding.Finding{Group: "stock", Check: "stock " + item, Status: finding.Fail, Detail: err.Error(),
			Fix: "the stock key must hold an integer: correct redis.stock in the profile, or the counter (" + noFix + ")"}
		if _, ok := errors.AsType[*profile.QueryError](err); ok || errors.Is(err, profile.ErrNoItem) {
			r.Fix = "see the profile group: the item's queries must run first"
		}
		return []finding.Finding{r}
	}
	a, ok := l.account(item, st)
	if !ok {
		a = profileAccount(e, st, lag)
	}
	r := finding.Finding{Group: "stock", Check: "stock " + item, Status: finding.Pass,
		Detail: fmt.Sprintf("redis %d on %d shard(s), expected %d = %s; %s", a.redis, st.Shards, a.want, a.terms, a.counts)}
	switch {
	case len(a.problems) > 0:
		r.Status, r.Detail = finding.Fail, strings.Join(a.problems, "; ")+" ("+r.Detail+")"
		r.Fix, r.Repair, r.Apply = a.fix, a.repairText, a.repair
	case a.settling != "":
		r.Status, r.Detail = finding.Warn, a.settling+" ("+r.Detail+")"
		r.Fix = "run again once the order consumer has drained"
	}
	out := []finding.Finding{r, itemSlots(e, item, st.Shards, l.keys)}
	if _, cluster := e.rdb.(*redis.ClusterClient); cluster {
		out = append(out, shardPlacement(ctx, e, item, st.Shards))
	}
	return out
}

// profileAccount holds an item's counters against what the profile's queries leave on sale: the
// units equation over live orders (before a sale nothing is held), each counter an integer >= 0
// and the buyers keys sets or hashes.
func profileAccount(e *env, st profile.ItemState, lag int64) account {
	want, terms := verify.Expected(verify.Item{Quantity: st.Quantity, Live: st.Live})
	a := account{redis: st.Inventory.Stock, want: want, terms: terms,
		counts: fmt.Sprintf("buyers %d, holds %d", st.Inventory.Buyers, st.Inventory.Holds),
		fix:    "find where the units went before the sale (" + noFix + ")"}
	missing := st.Inventory.Missing()
	if len(missing) > 0 {
		a.problems = append(a.problems, "no stock counter "+strings.Join(missing, ", "))
	}
	buyerKeys := 0
	for _, sh := range st.Inventory.Shards {
		if sh.StockSet && sh.Stock < 0 {
			a.problems = append(a.problems, fmt.Sprintf("%s holds %d: want >= 0", sh.Keys.Stock, sh.Stock))
		}
		switch sh.BuyersType {
		case "set", "hash":
			buyerKeys++
		case "none":
		default:
			a.problems = append(a.problems, fmt.Sprintf("%s is a %s: want a set or a hash of buyers", sh.Keys.Buyers, sh.BuyersType))
		}
	}
	if e.prof.Redis.Buyers != "" && buyerKeys == 0 && st.Live > 0 {
		a.problems = append(a.problems, fmt.Sprintf("no buyers key, but %d live order(s)", st.Live))
	}
	if off := a.redis - a.want; off != 0 {
		if len(a.problems) == 0 && lag > 0 {
			// The consumer has not written every order yet: Redis is ahead of PostgreSQL.
			a.settling = fmt.Sprintf("off by %d with %d order(s) still in Kafka", off, lag)
		} else {
			a.problems = append(a.problems, fmt.Sprintf("redis holds %d, expected %d (off by %+d)", a.redis, a.want, off))
		}
	}
	if len(missing) > 0 {
		recountMissing(e, &a, st, missing)
	}
	return a
}

// recountMissing offers the repair the profile declares for a missing counter: fix.stock
// recount sets an unsharded item's counter to quantity − live, and only where no counter exists,
// so it never overwrites one a purchase is moving.
func recountMissing(e *env, a *account, st profile.ItemState, missing []string) {
	switch {
	case e.prof.Fix.Stock != profile.Recount:
		a.fix = "preload the counter as the target does (" + noFix + ")"
		return
	case st.Shards > 1:
		a.fix = "preload the shards' counters as the target does (" + noFix + ": fix.stock recount covers unsharded items only)"
		return
	}
	key := missing[0]
	a.fix = "fsctl preflight --fix sets it to quantity − live orders (fix.stock: recount)"
	a.repairText = fmt.Sprintf("recount item %s: SET %s NX to quantity − live orders", st.Item, key)
	a.repair = func(ctx context.Context) error {
		row, err := e.pdb.Item(ctx, e.cfg.SaleID, st.Item)
		if err != nil {
			return err
		}
		live, err := e.pdb.Live(ctx, e.cfg.SaleID, st.Item)
		if err != nil {
			return err
		}
		return setMissing(ctx, e.rdb, key, row.Quantity-live)
	}
}

// setMissing writes a counter only if it does not exist (SETNX): a counter that appeared since
// the check is the target's and stays.
func setMissing(ctx context.Context, rdb redis.UniversalClient, key string, n int64) error {
	set, err := rdb.SetNX(ctx, key, strconv.FormatInt(n, 10), 0).Result()
	if err != nil {
		return fmt.Errorf("redis: set %s: %w", key, err)
	}
	if !set {
		return fmt.Errorf("redis: %s appeared since the check: left as it is", key)
	}
	return nil
}

// orderLag is how many orders the target's consumer has yet to write; 0 when there is no order
// log or it cannot be read (the kafka group reports that).
func (e *env) orderLag(ctx context.Context) int64 {
	if e.kafka == nil || e.cfg.OrdersTopic == "" || e.cfg.ConsumerGroup == "" {
		return 0
	}
	g, err := kafkaconn.GroupLag(ctx, e.kafka, e.cfg.OrdersTopic, e.cfg.ConsumerGroup)
	if err != nil {
		return 0
	}
	return g.Lag
}

// shardPlacement says which master of the cluster holds each shard of an item, and warns when two
// shards share a master while another master holds none of them: the shards are there to spread
// the item's load over the masters.
func shardPlacement(ctx context.Context, e *env, item string, shards int) finding.Finding {
	r := finding.Finding{Group: "stock", Check: "shard placement " + item, Status: finding.Pass}
	keys := e.prof.Keys(e.cfg.SaleID, item, shards)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Stock
	}
	nodes, masters, err := redisconn.Placement(ctx, e.rdb, names)
	if err != nil {
		r.Status, r.Detail = finding.Warn, err.Error()
		return r
	}
	labels := make([]string, len(keys))
	for i, k := range keys {
		labels[i] = "shard " + strconv.Itoa(k.Shard)
	}
	var crowded string
	r.Detail, crowded = redisconn.Spread(labels, nodes, masters)
	if crowded != "" {
		r.Status = finding.Warn
		r.Detail += ": " + crowded
		r.Fix = "move a slot of one of them to a free master (redis-cli --cluster reshard), or split the item over more shards"
	}
	return r
}

// itemSlots checks that the keys of one shard hash to one slot, so a Lua script can touch them
// all on a Redis Cluster: the profile's keys, and those of more keys when the target's scripts
// touch more (extra; nil adds none).
func itemSlots(e *env, item string, shards int, extra func(item string, shard int) []string) finding.Finding {
	r := finding.Finding{Group: "stock", Check: "hash slots " + item, Status: finding.Pass}
	var slots []string
	perShard := 0
	for _, k := range e.prof.Keys(e.cfg.SaleID, item, shards) {
		declared := k.Names()
		names := declared
		for _, n := range extra(item, k.Shard) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slot, stray, straySlot, ok := redisconn.SharedSlot(names)
		if !ok {
			r.Status = finding.Fail
			r.Detail = fmt.Sprintf("shard %d: %s is in slot %d, %s in slot %d", k.Shard, names[0], slot, stray, straySlot)
			r.Fix = "give every key of a shard one hash tag (${tag} in redis.stock, buyers and holds of " + e.prof.Source() + ")"
			if !slices.Contains(declared, stray) {
				r.Fix = "the key scheme lost its hash tag: this fsctl build is broken, report it"
			}
			return r
		}
		slots, perShard = append(slots, strconv.Itoa(slot)), len(names)
	}
	r.Detail = fmt.Sprintf("%d keys per shard share one slot: %s", perShard, strings.Join(slots, ", "))
	return r
}

// ledger is fsctl serve's account of its sale: every item against the sale definition, with
// reconcile's invariants, and the repairs of its own counters. Its methods answer nothing for a
// nil ledger: any other target is held against its profile alone.
type ledger struct {
	store   *stock.Store
	sale    sale.Sale
	reports map[string]reconcile.ItemReport
	// pristine: nothing was ever reserved or recorded, so every counter may be rebuilt.
	pristine bool
}

func newLedger(ctx context.Context, e *env, sl sale.Sale) (*ledger, error) {
	store := e.stock()
	reports, err := reconcile.Sale(ctx, store, e.db, sl)
	if err != nil {
		return nil, err
	}
	l := &ledger{store: store, sale: sl, reports: map[string]reconcile.ItemReport{}, pristine: true}
	for _, r := range reports {
		c := r.Counts
		l.pristine = l.pristine && r.Holds == 0 && c.Sold == 0 && c.Pending+c.Paid+c.Expired+c.Cancelled+c.Failed == 0
		l.reports[r.ItemID] = r
	}
	return l, nil
}

// account holds one item against the sale: its counters must hold what the units equation leaves
// (quantity − holds − paid), and the item must break none of reconcile's invariants. An
// item the sale does not have is left to the profile's account.
func (l *ledger) account(item string, st profile.ItemState) (account, bool) {
	if l == nil {
		return account{}, false
	}
	r, ok := l.reports[item]
	it, inSale := l.sale.Item(item)
	if !ok || !inSale {
		return account{}, false
	}
	want, terms := verify.Expected(r.Item(l.sale.PerUserLimit))
	a := account{redis: r.Stock, want: want, terms: terms,
		counts: fmt.Sprintf("holds %d, buyers %d", r.Holds, buyers(r))}
	var missing []int
	for _, sh := range st.Inventory.Shards {
		if !sh.StockSet {
			missing = append(missing, sh.Keys.Shard)
		}
	}
	if len(missing) > 0 {
		a.problems = append(a.problems, fmt.Sprintf("no stock counter on shard(s) %v", missing))
	}
	a.problems = append(a.problems, r.Problems...)
	if r.Holds > buyers(r)*int64(l.sale.PerUserLimit) {
		a.problems = append(a.problems, fmt.Sprintf("%d holds but only %d buyer records", r.Holds, buyers(r)))
	}
	l.repair(&a, it, r, missing)
	return a, true
}

// repair says how a failing item of the sale is repaired: preload never overwrites a counter
// that exists, so loading the missing ones is safe; with nothing ever sold the item is reloaded
// from PostgreSQL; live counters are reconcile's.
func (l *ledger) repair(a *account, it sale.Item, r reconcile.ItemReport, missing []int) {
	one := l.sale
	one.Items = []sale.Item{it}
	remaining := map[string]int64{it.ID: r.Quantity - r.Counts.Sold}
	st := l.store
	switch {
	case len(missing) > 0:
		a.fix = "fsctl preflight --fix (or fsctl sale create -f SALE.yaml) preloads the missing counters"
		a.repairText = fmt.Sprintf("preload item %s: shard(s) %v get their share of %d units", it.ID, missing, remaining[it.ID])
		a.repair = func(ctx context.Context) error {
			_, err := st.Preload(ctx, one, remaining)
			return err
		}
	case l.pristine:
		a.fix = "nothing sold yet: fsctl preflight --fix reloads the item from PostgreSQL"
		a.repairText = fmt.Sprintf("reset and preload item %s with %d units (nothing sold yet)", it.ID, r.Quantity)
		a.repair = func(ctx context.Context) error {
			if err := st.Reset(ctx, one); err != nil {
				return err
			}
			_, err := st.Preload(ctx, one, remaining)
			return err
		}
	default:
		a.fix = "units were already taken, so preflight will not rewrite live counters: fsctl reconcile --sale " + l.sale.ID + " (--fix)"
	}
}

func buyers(r reconcile.ItemReport) int64 {
	var n int64
	for _, sh := range r.Shards {
		n += sh.Buyers
	}
	return n
}

// keys are every key fsctl serve's scripts touch on one shard: more than its profile declares.
func (l *ledger) keys(item string, shard int) []string {
	if l == nil {
		return nil
	}
	it, _ := l.sale.Item(item)
	k := stock.ShardKeys(l.sale.ID, item, shard, it.ShardCount())
	return []string{k.Meta(), k.Stock(), k.Buyers(), k.Holds(), k.Orders(), k.Ledger(),
		k.Applied(), k.TransferSeq(), k.Idem("user", "key"), k.Released(uuid.Nil)}
}
