package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// rebuild restores a sale's Redis state from PostgreSQL after Redis lost it. The sale is paused
// and its keys wiped first, so no reservation runs on the state being replaced from then on. The
// order log is then recorded in PostgreSQL up to where it stands (catchUp), and each item's epoch
// is bumped: the fence. A hand-off still on its way lands after that read, so it is not in the
// snapshot; PostgreSQL drops it as stale (its epoch is older), and its server, which confirms the
// epoch before answering (server.confirm), told its buyer to retry, not RESERVED. Then, from one
// PostgreSQL snapshot, each shard is reloaded in one atomic step with its share of quantity − sold
// and the new epoch, every live order gets its record and buyer slot back (pending ones their
// hold), and the pause flag is set back to PostgreSQL's. Meanwhile buyers hear PAUSED, or 503
// while the keys are gone: transient answers they retry.
//
// The sale keeps running meanwhile: orders expire, are cancelled and paid. One snapshot makes the
// counter and the restored holds agree; an order that closes after it is restored with its hold,
// and its release (or the sweeper's, when the release came first) returns the unit. The atomic
// reload makes the counter exactly the snapshot's: a release that raced the wipe can have written
// an old counter back, and keeping that (as Preload would) lost units.
// Idempotency records cannot come back (PostgreSQL does not keep the keys): a buyer retrying an
// old key gets ALREADY_PURCHASED from the restored slot instead of the first answer.
func (r *run) rebuild(ctx context.Context) ([]Action, error) {
	c, sl := r.book, r.book.whole
	var acts []Action
	act := func(item, what, why string) {
		acts = append(acts, Action{ItemID: item, What: what, Why: why})
		fmt.Fprintf(r.cfg.Progress, "reconcile: %s\n", what)
	}
	if r.kafka == nil {
		return acts, errNoBrokers
	}
	// Pause whatever is left first, so no reserve runs on half-wiped keys.
	if err := c.st.SetPaused(ctx, sl, true); err != nil {
		return acts, err
	}
	if err := c.st.Wipe(ctx, sl); err != nil {
		return acts, err
	}
	act("", "wiped the sale's Redis keys", "--rebuild-redis: Redis is rebuilt from PostgreSQL, the source of truth")
	recorded := "the order log was recorded in PostgreSQL after Redis lost the sale"
	if !r.cfg.LogRecorded {
		n, err := r.catchUp(ctx, c.st)
		if err != nil {
			return acts, err
		}
		recorded = fmt.Sprintf("recorded the order log in PostgreSQL (%d events)", n)
	}
	epochs, err := c.db.NextEpochs(ctx, sl.ID)
	if err != nil {
		return acts, err
	}
	act("", fmt.Sprintf("%s and fenced what comes later (epoch %s)", recorded, epochList(sl, epochs)),
		"an order Redis granted is counted in the snapshot below, or dropped as stale and its buyer told to retry")
	reloaded := sl
	reloaded.Paused = true
	reloaded.Items = slices.Clone(sl.Items)
	for i := range reloaded.Items {
		reloaded.Items[i].Epoch = epochs[reloaded.Items[i].ID]
	}
	counts, live, err := pgSnapshot(ctx, c.db, sl.ID)
	if err != nil {
		return acts, err
	}
	remaining := map[string]int64{}
	for _, cnt := range counts {
		remaining[cnt.ItemID] = cnt.Quantity - cnt.Sold
	}
	if err := c.st.LoadScripts(ctx); err != nil {
		return acts, err
	}
	if err := c.st.Reload(ctx, reloaded, remaining); err != nil {
		return acts, err
	}
	// The per-sale claims start again from the live orders too: a claim Redis kept whose order
	// PostgreSQL does not have would hold a buyer back for nothing.
	if err := c.st.ResetClaims(ctx, sl.ID); err != nil {
		return acts, err
	}
	restored, err := restoreOrders(ctx, c.st, sl, live)
	if err != nil {
		return acts, err
	}
	for _, it := range sl.Items {
		n := restored[it.ID]
		act(it.ID, fmt.Sprintf("reloaded %d units over %d shard(s); restored %d pending holds and %d paid orders",
			remaining[it.ID], it.ShardCount(), n[0], n[1]), "PostgreSQL: quantity − sold, and every live order")
	}
	if err := c.st.SetPaused(ctx, sl, sl.Paused); err != nil {
		return acts, err
	}
	if !sl.Paused {
		act("", "resumed the sale in Redis", "it is not paused in PostgreSQL")
	}
	return acts, nil
}

// epochList is the items' new epochs, "3" when they agree.
func epochList(sl sale.Sale, epochs map[string]int64) string {
	var parts []string
	for _, it := range sl.Items {
		parts = append(parts, fmt.Sprintf("%s %d", it.ID, epochs[it.ID]))
	}
	if len(sl.Items) > 0 && !slices.ContainsFunc(sl.Items, func(it sale.Item) bool { return epochs[it.ID] != epochs[sl.Items[0].ID] }) {
		return fmt.Sprint(epochs[sl.Items[0].ID])
	}
	return strings.Join(parts, ", ")
}

// restoreParallel is how many live orders the rebuild restores at once. Each takes three round
// trips (its record and hold, its per-sale claim, its reference); one after the other, a sale's
// outage after a lost Redis grew with its live orders (550 took about 0.6 s on the 2-core box's
// cluster, in a chaos seed where PostgreSQL came back just before). The orders are independent:
// PostgreSQL gives each buyer slot at most one live order.
const restoreParallel = 32

// restoreOrders gives every live order its record, hold (a pending one), buyer slot, per-sale
// claim and reference back, restoreParallel at a time, and counts the pending and paid orders
// restored per item.
func restoreOrders(ctx context.Context, st *stock.Store, sl sale.Sale, live []pgOrder) (map[string][2]int, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(restoreParallel)
	for _, o := range live {
		it, _ := sl.Item(o.ItemID)
		g.Go(func() error {
			_, err := st.RestoreOrder(gctx, stock.Restore{SaleID: sl.ID, ItemID: o.ItemID, Shard: o.Shard, Shards: it.ShardCount(),
				Hold: o.hold(), Pending: o.Status == "PENDING"})
			if err != nil {
				return fmt.Errorf("restore order %s: %w", o.ID, err)
			}
			if err := restoreClaim(gctx, st, sl.ID, o); err != nil {
				return err
			}
			return st.SetOrderRef(gctx, o.ID, sl.ID, o.ItemID, o.UserID, o.Shard, it.ShardCount())
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	restored := map[string][2]int{}
	for _, o := range live {
		n := restored[o.ItemID]
		if o.Status == "PENDING" {
			n[0]++
		} else {
			n[1]++
		}
		restored[o.ItemID] = n
	}
	return restored, nil
}
