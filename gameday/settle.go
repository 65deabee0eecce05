package gameday

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/provision"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/room"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
	"github.com/fsctl/fsctl/verify"
)

// saleOf is the scenario's sale definition, open from a second ago.
func (r *run) saleOf() sale.Sale {
	sp := r.cfg.Scenario.Sale
	sl := sale.Sale{ID: sp.ID, Name: "game day " + r.cfg.Scenario.Name, OpensAt: r.cfg.Now().Add(-time.Second).UTC().Truncate(time.Second),
		PerUserLimit: sp.PerUserLimit, HoldTTL: sp.HoldTTL}
	for _, it := range sp.Items {
		sl.Items = append(sl.Items, sale.Item{ID: it.ID, Name: it.ID, Quantity: it.Quantity, PriceCents: 1000, Shards: it.Shards})
	}
	if r := sp.Room; r != nil {
		sl.Room = sale.Room{Enabled: true, AdmissionRate: r.AdmissionRate, MaxActive: r.MaxActive, PowDifficulty: r.PowDifficulty}
	}
	sl.Normalize()
	return sl
}

// createSale migrates the schema and creates the sale afresh (game days are rehearsals).
func (r *run) createSale(ctx context.Context) (string, error) {
	e := r.env.Endpoints
	if _, err := orders.Migrate(ctx, e.PostgresURL); err != nil {
		return "", err
	}
	db, err := orders.Open(ctx, e.PostgresURL)
	if err != nil {
		return "", err
	}
	opts, err := redis.ParseURL(e.RedisURL)
	if err != nil {
		db.Close()
		return "", err
	}
	rdb := redis.NewClient(opts)
	r.db, r.st = db, stock.New(rdb)
	r.closeStores = func() { db.Close(); rdb.Close() }
	r.sale = r.saleOf()
	if err := r.sale.Validate(); err != nil {
		return "", err
	}
	if _, err := provision.Sale(ctx, db, r.st, r.sale, provision.Options{Reset: true}); err != nil {
		return "", err
	}
	if err := room.New(rdb).Reset(ctx, r.sale.ID); err != nil {
		return "", err
	}
	return fmt.Sprintf("sale %s reset: %d item(s), %d units, hold %s, %d per user", r.sale.ID, len(r.sale.Items), r.cfg.Scenario.Units(), r.sale.HoldTTL, r.sale.PerUserLimit), nil
}

// reservedOrders are the distinct orders buyers were told RESERVED for.
func (r *run) reservedOrders() []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	var out []uuid.UUID
	for _, rec := range r.records {
		if rec.Outcome != outcome.Reserved {
			continue
		}
		id, err := uuid.Parse(rec.OrderID)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// settle waits until every reservation has ended: no order PENDING, no hold left in Redis, and
// every order a buyer was told about in PostgreSQL. Services may still be recovering, so errors
// only mean "not yet".
func (r *run) settle(ctx context.Context) (string, error) {
	ids := r.reservedOrders()
	var last string
	waiting, err := verify.Settle(ctx, r.cfg.Scenario.Settle, 500*time.Millisecond, func(ctx context.Context) ([]string, error) {
		state, done := r.settled(ctx, ids)
		if done {
			last = state
			return nil, nil
		}
		if state != last {
			r.note("settling: %s", state)
			last = state
		}
		return []string{state}, nil
	})
	switch {
	case err != nil:
		return "", err
	case len(waiting) > 0:
		return "", fmt.Errorf("not settled after %s: %s", r.cfg.Scenario.Settle, last)
	}
	return last, nil
}

func (r *run) settled(ctx context.Context, ids []uuid.UUID) (string, bool) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	counts, err := r.db.Counts(qctx, r.sale.ID)
	if err != nil {
		return "postgres: " + err.Error(), false
	}
	snap, err := r.st.Snapshot(qctx, r.sale.ID, r.sale.Items)
	if err != nil {
		return "redis: " + err.Error(), false
	}
	statuses, err := r.db.Statuses(qctx, ids)
	if err != nil {
		return "postgres: " + err.Error(), false
	}
	var pending, holds int64
	for _, c := range counts {
		pending += c.Pending
	}
	for _, s := range snap {
		holds += s.Holds
	}
	missing := len(ids) - len(statuses)
	state := fmt.Sprintf("%d pending in PostgreSQL, %d holds in Redis, %d of %d reserved orders not in PostgreSQL yet", pending, holds, missing, len(ids))
	return state, pending == 0 && holds == 0 && missing == 0
}

// reconcile runs `fsctl reconcile` on the settled sale: Redis, PostgreSQL and Kafka order by order.
func (r *run) reconcile(ctx context.Context) (string, error) {
	e := r.env.Endpoints
	rep, err := reconcile.Run(ctx, reconcile.Config{
		SaleID: r.sale.ID, RedisURL: e.RedisURL, PostgresURL: e.PostgresURL, Brokers: e.KafkaBrokers,
		DrainTimeout: 30 * time.Second, Timeout: 5 * time.Second,
	})
	if err != nil {
		return "", err
	}
	r.rep.Reconcile = rep.Items
	var b strings.Builder
	_ = rep.Render(&b)
	r.rep.ReconcileText = b.String()
	if !rep.OK() {
		var problems []string
		for _, it := range rep.Items {
			for _, p := range it.Problems {
				problems = append(problems, it.ItemID+": "+p)
			}
		}
		return "", fmt.Errorf("reconcile: %s", detail(problems, ""))
	}
	return fmt.Sprintf("OK: Redis, PostgreSQL and Kafka agree on %d item(s)", len(rep.Items)), nil
}

// rebuild restores the sale's Redis state from PostgreSQL after Redis lost it.
func (r *run) rebuild(ctx context.Context) (string, error) {
	e := r.env.Endpoints
	rep, err := reconcile.Run(ctx, reconcile.Config{
		SaleID: r.sale.ID, RedisURL: e.RedisURL, PostgresURL: e.PostgresURL, Brokers: e.KafkaBrokers,
		RebuildRedis: true, DrainTimeout: time.Minute, Timeout: 5 * time.Second,
	})
	if err != nil {
		return "", err
	}
	var what []string
	for _, a := range rep.Actions {
		if a.Error != "" {
			return "", fmt.Errorf("%s %s: %s", a.ItemID, a.What, a.Error)
		}
		what = append(what, strings.TrimSpace(a.ItemID+" "+a.What))
	}
	return fmt.Sprintf("%d action(s): %s", len(rep.Actions), strings.Join(what, "; ")), nil
}

// invariants checks the invariants of docs/design.md against the settled sale and what buyers were told.
func (r *run) invariants(ctx context.Context) (string, error) {
	ids := r.reservedOrders()
	statuses, err := r.db.Statuses(ctx, ids)
	if err != nil {
		return "", err
	}
	counts, err := r.db.Counts(ctx, r.sale.ID)
	if err != nil {
		return "", err
	}
	snap, err := r.st.Snapshot(ctx, r.sale.ID, r.sale.Items)
	if err != nil {
		return "", err
	}
	oversell, lost := stateChecks(counts, snap)
	checks := []finding.Finding{
		oversell,
		lost,
		checkEndings(ids, statuses),
		checkFollowUps(r.followUps, statuses),
	}
	checks = append(checks, checkAnswers(r.rep.Blast.Verdicts))
	r.rep.Invariants = checks
	var failed []string
	for _, c := range checks {
		if !c.Passed() {
			failed = append(failed, c.Check)
		}
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("violated: %s", strings.Join(failed, ", "))
	}
	return fmt.Sprintf("%d invariants hold", len(checks)), nil
}

// stateChecks are verify's rules over the settled sale, as two of the game day's invariants: no
// oversell (nothing given beyond the quantity, no stock below zero) and nothing lost (every unit
// in Redis's stock, a hold or a paid order; the sold counter the live orders).
func stateChecks(counts []orders.ItemCounts, snap []stock.ItemState) (oversell, lost finding.Finding) {
	var over, gone, overSum, goneSum []string
	for _, c := range counts {
		it := verify.Item{ID: c.ItemID, Quantity: c.Quantity, Sold: verify.Of(c.Sold), Live: c.Pending + c.Paid, Paid: verify.Of(c.Paid)}
		i := slices.IndexFunc(snap, func(s stock.ItemState) bool { return s.ItemID == c.ItemID })
		if i < 0 {
			gone = append(gone, c.ItemID+": not in Redis")
		} else {
			s := snap[i]
			it.Stock, it.Holds = s.Stock, verify.Of(s.Holds)
			for _, sh := range s.Shards {
				it.Shards = append(it.Shards, verify.Shard{Index: sh.Shard, Name: fmt.Sprintf("shard %d stock", sh.Shard), Stock: sh.Stock})
			}
			goneSum = append(goneSum, fmt.Sprintf("%s: stock %d + holds %d = %d - paid %d", c.ItemID, s.Stock, s.Holds, c.Quantity, c.Paid))
		}
		for _, p := range verify.Check(it) {
			if p.Oversell() {
				over = append(over, c.ItemID+": "+p.String())
			} else {
				gone = append(gone, c.ItemID+": "+p.String())
			}
		}
		overSum = append(overSum, fmt.Sprintf("%s paid %d of %d", c.ItemID, c.Paid, c.Quantity))
	}
	return check("no oversell", len(over) == 0, detail(over, strings.Join(overSum, ", "))),
		check("nothing lost", len(gone) == 0, detail(gone, strings.Join(goneSum, ", ")))
}

// checkEndings: every RESERVED answer ends in PostgreSQL as paid, expired, cancelled or failed.
func checkEndings(ids []uuid.UUID, statuses map[uuid.UUID]string) finding.Finding {
	by := map[string]int{}
	var p []string
	for _, id := range ids {
		st, ok := statuses[id]
		switch {
		case !ok:
			p = append(p, id.String()+": not in PostgreSQL")
		case st == orders.StatusPending:
			p = append(p, id.String()+": still PENDING")
		}
		by[st]++
	}
	var sum []string
	for _, st := range []string{"PAID", "EXPIRED", "CANCELLED", "FAILED"} {
		sum = append(sum, fmt.Sprintf("%s %d", st, by[st]))
	}
	return check("every reserved answer ended in PostgreSQL", len(p) == 0, detail(p, fmt.Sprintf("%d reserved: %s", len(ids), strings.Join(sum, ", "))))
}

// checkFollowUps: a buyer told PAID or CANCELLED finds that in PostgreSQL.
func checkFollowUps(fs []loadgen.FollowUp, statuses map[uuid.UUID]string) finding.Finding {
	var p []string
	n := 0
	for _, f := range fs {
		if f.Answer != "PAID" && f.Answer != "CANCELLED" {
			continue
		}
		n++
		id, err := uuid.Parse(f.OrderID)
		if err != nil {
			continue
		}
		if got := statuses[id]; got != f.Answer {
			p = append(p, fmt.Sprintf("buyer %d told %s, PostgreSQL has %q for %s", f.Buyer, f.Answer, got, f.OrderID))
		}
	}
	return check("paid and cancelled answers match PostgreSQL", len(p) == 0, detail(p, fmt.Sprintf("%d answers checked", n)))
}

func detail(problems []string, ok string) string {
	if len(problems) == 0 {
		return ok
	}
	if len(problems) > 5 {
		return strings.Join(problems[:5], "; ") + fmt.Sprintf("; and %d more", len(problems)-5)
	}
	return strings.Join(problems, "; ")
}

// checkAnswers folds blast's checks of the answers themselves (same key, same answer; the per-user
// limit) into one line; blast's own table lists them one by one.
func checkAnswers(vs []finding.Finding) finding.Finding {
	var p, names []string
	for _, v := range vs {
		names = append(names, v.Check)
		for _, x := range v.Problems {
			p = append(p, v.Check+": "+x)
		}
		if !v.Passed() && len(v.Problems) == 0 {
			p = append(p, v.Check)
		}
	}
	return check("answers consistent", len(p) == 0, detail(p, strings.Join(names, ", ")))
}

// check is one invariant after recovery: the detail says what broke it, or sums it up.
func check(name string, ok bool, detail string) finding.Finding {
	f := finding.Finding{Check: name, Status: finding.Pass, Detail: detail}
	if !ok {
		f.Status = finding.Fail
	}
	return f
}
