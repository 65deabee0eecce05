package blast

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/profile"
)

// settlePoll is how often CheckProfile reads the target again while it waits for the consumer.
const settlePoll = 200 * time.Millisecond

// CheckProfile checks a target that is not fsctl serve through what its profile declares: every
// buyer told RESERVED has a live order in PostgreSQL (waiting up to wait for the target's
// consumer), no item has more live orders or a higher sold counter than its quantity, and,
// once settled, each item's Redis stock plus its live orders is its quantity. The items are
// those of sale that the records or limits name.
func CheckProfile(ctx context.Context, t *profile.Target, sale string, recs []Record, limits map[Target]ItemLimit, wait time.Duration) ([]Verdict, error) {
	items := saleItems(sale, recs, limits)
	deadline := time.Now().Add(wait)
	missing, err := waitReserved(ctx, t, sale, recs, deadline)
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, r := range missing {
		lost = append(lost, fmt.Sprintf("%s: %s was told RESERVED (order %q) but has no live order in PostgreSQL after %s",
			r.Target, r.User, r.OrderID, wait))
	}
	oversell, drift, err := waitAgree(ctx, t, sale, items, deadline)
	if err != nil {
		return nil, err
	}
	return []Verdict{
		verdict("every RESERVED order reached PostgreSQL", lost),
		verdict("no oversell (PostgreSQL)", oversell),
		verdict("Redis agrees with PostgreSQL", drift),
	}, nil
}

// saleItems are the items of sale that the records or the limits name, sorted.
func saleItems(sale string, recs []Record, limits map[Target]ItemLimit) []string {
	var items []string
	add := func(tg Target) {
		if tg.SaleID == sale && !slices.Contains(items, tg.ItemID) {
			items = append(items, tg.ItemID)
		}
	}
	for _, r := range recs {
		add(r.Target)
	}
	for tg := range limits {
		add(tg)
	}
	slices.Sort(items)
	return items
}

// waitReserved polls sql.userOrders until every buyer of sale told RESERVED has a live order of
// the item or the deadline passes, and returns the records still without one (one per buyer
// and item: retries and replays of a reservation are one order).
func waitReserved(ctx context.Context, t *profile.Target, sale string, recs []Record, deadline time.Time) ([]Record, error) {
	type buyerItem struct{ user, item string }
	seen := map[buyerItem]bool{}
	var pending []Record
	for _, r := range recs {
		k := buyerItem{r.User, r.Target.ItemID}
		if r.Outcome == outcome.Reserved && r.Target.SaleID == sale && !seen[k] {
			seen[k] = true
			pending = append(pending, r)
		}
	}
	for {
		var still []Record
		buyers := map[string]map[string]int64{} // item → live buyers, when the profile can list them
		for _, r := range pending {
			live, err := hasLiveOrder(ctx, t, sale, r, buyers)
			if err != nil {
				return nil, err
			}
			if !live {
				still = append(still, r)
			}
		}
		pending = still
		if len(pending) == 0 || !time.Now().Before(deadline) {
			return pending, nil
		}
		if err := pause(ctx); err != nil {
			return nil, err
		}
	}
}

// hasLiveOrder reports whether a buyer has a live order of the record's item: from the item's
// live buyers, read once per poll, when the profile declares sql.liveBuyers (one query for ten
// thousand buyers), else from the buyer's own orders (sql.userOrders).
func hasLiveOrder(ctx context.Context, t *profile.Target, sale string, r Record, buyers map[string]map[string]int64) (bool, error) {
	item := r.Target.ItemID
	if t.P.SQL.LiveBuyers != "" {
		if _, read := buyers[item]; !read {
			live, _, err := t.DB.LiveBuyers(ctx, sale, item)
			if err != nil {
				return false, err
			}
			buyers[item] = live
		}
		return buyers[item][r.User] > 0, nil
	}
	orders, err := t.DB.UserOrders(ctx, sale, item, r.User)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(orders, func(o profile.Order) bool { return t.P.IsLive(o.Status) }), nil
}

// waitAgree reads every item until Redis and PostgreSQL agree or the deadline passes (orders
// the consumer has not written yet show as drift), and returns the oversells and the drift of
// the last read.
func waitAgree(ctx context.Context, t *profile.Target, sale string, items []string, deadline time.Time) (oversell, drift []string, err error) {
	for {
		oversell, drift = nil, nil
		for _, item := range items {
			st, err := t.State(ctx, sale, item)
			if err != nil {
				return nil, nil, fmt.Errorf("read item %s: %w", item, err)
			}
			oversell = append(oversell, oversold(st)...)
			drift = append(drift, disagree(st)...)
		}
		if len(drift) == 0 || !time.Now().Before(deadline) {
			return oversell, drift, nil
		}
		if err := pause(ctx); err != nil {
			return nil, nil, err
		}
	}
}

// oversold lists what PostgreSQL gave out beyond the item's quantity.
func oversold(st profile.ItemState) []string {
	var out []string
	if st.Live > st.Quantity {
		out = append(out, fmt.Sprintf("%s: %d live orders for %d units", st.Item, st.Live, st.Quantity))
	}
	if st.Sold > st.Quantity {
		out = append(out, fmt.Sprintf("%s: sold counter %d over its %d units", st.Item, st.Sold, st.Quantity))
	}
	return out
}

// disagree lists where the item's Redis stock does not account for PostgreSQL's live orders.
func disagree(st profile.ItemState) []string {
	var out []string
	for _, key := range st.Missing() {
		out = append(out, fmt.Sprintf("%s: stock key %s does not exist", st.Item, key))
	}
	for _, sh := range st.Inventory.Shards {
		if sh.StockSet && sh.Stock < 0 {
			out = append(out, fmt.Sprintf("%s: stock key %s is %d, below zero", st.Item, sh.Keys.Stock, sh.Stock))
		}
	}
	if st.Stock+st.Live != st.Quantity {
		out = append(out, fmt.Sprintf("%s: Redis stock %d + %d live orders = %d, want its quantity %d",
			st.Item, st.Stock, st.Live, st.Stock+st.Live, st.Quantity))
	}
	return out
}

// pause waits one poll interval, or returns the context's error.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settlePoll):
		return nil
	}
}
