package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/proof/verify"
)

// Kinds of finding, each a way Redis and PostgreSQL can disagree about a sale.
const (
	KindOrphanedHold      = "orphaned hold"       // a Redis hold whose order is closed or was never recorded
	KindUnsettledHold     = "unsettled hold"      // a Redis hold of an order PostgreSQL says is paid
	KindMissingHold       = "missing hold"        // a pending order whose Redis hold is gone
	KindBuyerWithoutOrder = "buyer without order" // a Redis slot or record no live order stands behind
	KindOrderWithoutBuyer = "order without buyer" // a live order Redis knows nothing about
	KindDuplicateLive     = "duplicate live orders"
	KindUnits             = verify.Units
	KindOversold          = verify.Oversold
	KindSoldCounter       = verify.SoldCounter
	KindNegativeShard     = verify.NegativeShard
	KindMissingStock      = verify.MissingStock // a stock counter Redis does not have
	KindMalformed         = "malformed entry"
	KindMissingClaim      = "missing per-sale claim" // a live order of a limited sale whose claim Redis lost
)

// Finding is one disagreement: a finding that fails, its check the kind of disagreement, its fix
// what --fix does or why it leaves it to a person, and its Apply the repair (nil when it is not
// safe to make automatically); about an order, a buyer or a shard.
type Finding struct {
	finding.Finding
	Order string `json:"order,omitempty"`
	User  string `json:"user,omitempty"`
	Shard int    `json:"shard"`
}

// disagreement is a finding of kind that says detail, fix what --fix does about it.
func disagreement(kind, detail, fix string) Finding {
	return Finding{Finding: finding.Finding{Check: kind, Status: finding.Fail, Detail: detail, Fix: fix}}
}

// of sets what the finding is about: an order (or ""), a buyer (or "") and a shard.
func (f Finding) of(order, user string, shard int) Finding {
	f.Order, f.User, f.Shard = order, user, shard
	return f
}

// repairedBy sets the repair --fix makes.
func (f Finding) repairedBy(apply func(context.Context) error) Finding {
	f.Apply = apply
	return f
}

func (f Finding) key() string {
	return f.Check + "|" + f.Order + "|" + f.User + "|" + fmt.Sprint(f.Shard)
}

// analysis compares one item's two sides. inFlight counts the Redis orders PostgreSQL has not
// recorded yet and that are too young (or the log too far behind) to call orphaned.
type analysis struct {
	findings []Finding
	inFlight int
}

// analyzer holds what every item's comparison needs.
type analyzer struct {
	sale      sale.Sale
	st        *stock.Store
	readStart time.Time
	now       time.Time
	orphanAge time.Duration
	// lag is the order consumer's lag, -1 when Kafka could not be read.
	lag       int64
	republish func(context.Context, stock.Hold, sale.Item) error
}

func (a analyzer) item(s itemState) analysis {
	var out analysis
	add := func(f Finding) { out.findings = append(out.findings, f) }
	it := s.item
	redisOrders := map[uuid.UUID]stock.Hold{}
	slots := map[string]map[int]uint32{} // user → shard → slots of Redis orders
	for _, sh := range s.shards {
		for _, m := range sh.Malformed {
			add(disagreement(KindMalformed, m, "left alone: inspect the key by hand").of("", "", sh.Shard))
		}
		for id, h := range sh.Orders {
			redisOrders[id] = h
			if slots[h.UserID] == nil {
				slots[h.UserID] = map[int]uint32{}
			}
			slots[h.UserID][sh.Shard] |= 1 << h.Slot
		}
	}
	for _, sh := range s.shards {
		for id, exp := range sh.Holds {
			a.hold(&out, s, sh.Shard, id, exp, redisOrders)
		}
		for id, h := range sh.Orders {
			if _, held := sh.Holds[id]; held {
				continue
			}
			a.settledRecord(&out, s, h)
		}
		for user, mask := range sh.Buyers {
			if want := slots[user][sh.Shard]; mask&^want != 0 {
				add(disagreement(KindBuyerWithoutOrder, fmt.Sprintf("buyer record has slots %b, its live orders %b", mask, want),
					fmt.Sprintf("clear the empty slots (record %b)", want)).of("", user, sh.Shard).repairedBy(a.setMask(it.ID, sh.Shard, user, want)))
			}
		}
	}
	a.unrecorded(&out, s, redisOrders)
	a.duplicates(&out, s)
	return out
}

// hold classifies one Redis hold by what PostgreSQL says of its order.
func (a analyzer) hold(out *analysis, s itemState, shard int, id uuid.UUID, exp time.Time, redisOrders map[uuid.UUID]stock.Hold) {
	it := s.item
	rec, hasRec := redisOrders[id]
	o, live := s.live[id]
	switch {
	case live && o.Status == "PENDING":
		return
	case live && o.Status == "PAID":
		out.findings = append(out.findings, disagreement(KindUnsettledHold, "paid in PostgreSQL, still held in Redis (it would be released again at expiry)",
			"settle the hold").of(id.String(), "", shard).repairedBy(func(ctx context.Context) error {
			_, err := a.st.Settle(ctx, stock.Settle{SaleID: a.sale.ID, ItemID: it.ID, Shard: shard, Shards: it.ShardCount(), OrderID: id})
			return err
		}))
	case s.other[id] != "":
		status := s.other[id]
		out.findings = append(out.findings, disagreement(KindOrphanedHold, fmt.Sprintf("%s in PostgreSQL, still held in Redis: its unit never came back", status),
			"release the hold (the unit returns to stock once)").of(id.String(), "", shard).repairedBy(func(ctx context.Context) error {
			_, err := a.st.Release(ctx, stock.Release{SaleID: a.sale.ID, ItemID: it.ID, Shard: shard, Shards: it.ShardCount(), OrderID: id, Status: status})
			return err
		}))
	case a.lag != 0 || exp.Add(-a.sale.HoldTTL).After(a.now.Add(-a.orphanAge)):
		out.inFlight++ // on its way through Kafka
	case !hasRec:
		out.findings = append(out.findings, disagreement(KindOrphanedHold, "a hold with neither an order record in Redis nor an order in PostgreSQL",
			"left alone: nobody can say whom it belongs to; release it by hand once understood").of(id.String(), "", shard))
	default:
		f := disagreement(KindOrphanedHold, fmt.Sprintf("reserved %s ago, never recorded in PostgreSQL (the buyer was told RESERVED)", a.now.Sub(exp.Add(-a.sale.HoldTTL)).Round(time.Second)),
			"left alone: no Kafka brokers given to re-publish it").of(id.String(), rec.UserID, shard)
		if a.republish != nil {
			rec.ExpiresAt = exp
			f.Fix = "re-publish its OrderPlaced: the consumer records it, expiry or payment ends it"
			f.Apply = func(ctx context.Context) error { return a.republish(ctx, rec, it) }
		}
		out.findings = append(out.findings, f)
	}
}

// settledRecord checks a Redis order without a hold: the unit is sold to the buyer in Redis, so
// PostgreSQL must say paid (or still pending, if the hold was lost).
func (a analyzer) settledRecord(out *analysis, s itemState, h stock.Hold) {
	o, live := s.live[h.OrderID]
	switch {
	case live && o.Status == "PAID":
	case live:
		o := o
		out.findings = append(out.findings, disagreement(KindMissingHold, "pending in PostgreSQL but Redis has no hold: expiry could never return its unit",
			fmt.Sprintf("restore the hold (expires %s)", o.ExpiresAt.UTC().Format(time.RFC3339))).
			of(h.OrderID.String(), h.UserID, h.Shard).repairedBy(a.restore(s.item.ID, o, false)))
	case a.lag != 0:
		out.inFlight++
	default:
		status := s.other[h.OrderID]
		if status == "" {
			status = "no order"
		}
		out.findings = append(out.findings, disagreement(KindBuyerWithoutOrder, fmt.Sprintf("Redis counts the unit sold to %s, PostgreSQL says %s", h.UserID, status),
			"left alone: decide whether the buyer has the unit, then release or record it by hand").of(h.OrderID.String(), h.UserID, h.Shard))
	}
}

// missingClaims finds the live orders of a sale with a per-sale limit whose claim Redis does not
// have (claims: every claim, read before PostgreSQL): without it the buyer could reserve past
// the limit, and only PostgreSQL's index would refuse the order. Orders younger than the read
// may have been claimed after it.
func (a analyzer) missingClaims(s itemState, claims map[uuid.UUID]stock.Claim) []Finding {
	var out []Finding
	for _, o := range sortedOrders(s.live) {
		if o.SaleSlot == nil || !o.CreatedAt.Before(a.readStart) {
			continue
		}
		if _, ok := claims[o.ID]; ok {
			continue
		}
		out = append(out, disagreement(KindMissingClaim,
			fmt.Sprintf("%s in PostgreSQL in per-sale slot %d, but Redis has no claim for it: the buyer could reserve past the per-sale limit (PostgreSQL would refuse that order)", o.Status, *o.SaleSlot),
			fmt.Sprintf("restore the claim of slot %d", *o.SaleSlot)).
			of(o.ID.String(), o.UserID, o.Shard).repairedBy(func(ctx context.Context) error { return restoreClaim(ctx, a.st, a.sale.ID, o) }))
	}
	return out
}

// unrecorded finds live orders Redis knows nothing about. Only orders older than the Redis read
// count: one recorded after it may have been reserved after it too.
func (a analyzer) unrecorded(out *analysis, s itemState, redisOrders map[uuid.UUID]stock.Hold) {
	perUser := map[string]int{}
	for _, o := range s.live {
		perUser[o.UserID]++
	}
	for _, o := range sortedOrders(s.live) {
		if _, ok := redisOrders[o.ID]; ok || !o.CreatedAt.Before(a.readStart) {
			continue
		}
		f := disagreement(KindOrderWithoutBuyer, fmt.Sprintf("%s in PostgreSQL, unknown to Redis (its unit is still counted on sale there)", o.Status), "").
			of(o.ID.String(), o.UserID, o.Shard)
		if o.Slot < a.sale.PerUserLimit && perUser[o.UserID] <= a.sale.PerUserLimit {
			f.Fix = "record it in Redis: take its unit out of stock, set the buyer's slot"
			if o.Status == "PENDING" {
				f.Fix += ", restore its hold"
			}
			f.Apply = a.restore(s.item.ID, o, true)
		} else {
			f.Fix = "left alone: it breaks the per-user limit (see duplicate live orders)"
		}
		out.findings = append(out.findings, f)
	}
}

func (a analyzer) duplicates(out *analysis, s itemState) {
	byUser := map[string][]string{}
	for _, o := range sortedOrders(s.live) {
		byUser[o.UserID] = append(byUser[o.UserID], o.ID.String()+" "+o.Status)
	}
	users := make([]string, 0, len(byUser))
	for u := range byUser {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		if n := len(byUser[u]); n > a.sale.PerUserLimit {
			out.findings = append(out.findings, disagreement(KindDuplicateLive, fmt.Sprintf("%d live orders, limit %d: %v", n, a.sale.PerUserLimit, byUser[u]),
				"left alone: cancel the extra one (DELETE /api/v1/orders/{id}), refunding it if paid").of("", u, 0))
		}
	}
}

func sortedOrders(m map[uuid.UUID]pgOrder) []pgOrder {
	out := make([]pgOrder, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	slices.SortFunc(out, func(x, y pgOrder) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out
}

func (a analyzer) restore(itemID string, o pgOrder, takeUnit bool) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := a.st.RestoreOrder(ctx, stock.Restore{SaleID: a.sale.ID, ItemID: itemID, Shard: o.Shard, Shards: a.shards(itemID),
			Hold: o.hold(), Pending: o.Status == "PENDING", TakeUnit: takeUnit})
		if err != nil {
			return err
		}
		return restoreClaim(ctx, a.st, a.sale.ID, o)
	}
}

// shards is an item's shard count, which with a shard number names the shard's keys.
func (a analyzer) shards(itemID string) int {
	it, _ := a.sale.Item(itemID)
	return it.ShardCount()
}

func (a analyzer) setMask(itemID string, shard int, user string, mask uint32) func(context.Context) error {
	return func(ctx context.Context) error {
		return a.st.SetBuyerMask(ctx, a.sale.ID, itemID, shard, a.shards(itemID), user, mask)
	}
}

// invariantFindings turns the item-level rules an item breaks into findings: a stock that went
// below zero or an oversell is left to a person; fix offers the repair of the others (or drops the
// finding, returning false, where its path checks that rule its own way).
func invariantFindings(ps []verify.Problem, fix func(*Finding, verify.Problem) bool) []Finding {
	var out []Finding
	for _, p := range ps {
		f := disagreement(p.Invariant, p.Detail, "").of("", "", p.Shard)
		switch p.Invariant {
		case verify.Oversold:
			f.Fix = "left alone: fix by hand (decide which buyers to cancel and refund)"
		case verify.NegativeShard:
			f.Fix = "left alone: units were given out twice; fix by hand (decide which buyers to cancel and refund)"
		}
		if fix(&f, p) {
			out = append(out, f)
		}
	}
	return out
}
