package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fsctl/fsctl/profile"
)

// probeUser is the user the userOrders query and the sample purchase are rendered for: nobody
// real, so its orders are none.
const probeUser = "fsctl-preflight-probe"

// checkProfile: the target profile fits the live target — every query runs and returns sane
// values, every template renders and a token can be minted. It runs for every profile, the
// bundled one included, so the profile every other command reads the target through is verified
// before the sale.
func checkProfile(ctx context.Context, e *env) []Result {
	out := []Result{templates(e)}
	if e.pdb == nil {
		return append(out, needs("profile", "PostgreSQL")...)
	}
	out = append(out, itemsResult(e))
	limit, err := e.pdb.PerUserLimit(ctx, e.cfg.SaleID)
	lr := Result{Group: "profile", Check: "per-user limit", Status: Pass, Detail: fmt.Sprintf("%d per user", limit)}
	switch {
	case err != nil:
		lr = queryFailure(e, lr, err)
	case limit < 1:
		lr.Status, lr.Detail = Fail, fmt.Sprintf("sql.perUserLimit returned %d: want at least 1", limit)
		lr.Fix = fixField(e, "sql.perUserLimit")
	}
	out = append(out, lr)
	for _, item := range e.items {
		out = append(out, itemQueries(ctx, e, item, limit))
	}
	return out
}

func itemsResult(e *env) Result {
	r := Result{Group: "profile", Check: "sql.items"}
	if e.itemsErr != nil {
		r = queryFailure(e, r, e.itemsErr)
		if r.Fix == "" {
			r.Fix = "is --sale right? else " + fixField(e, "sql.items")
		}
		return r
	}
	r.Status, r.Detail = Pass, fmt.Sprintf("%d item(s): %s", len(e.listed), strings.Join(e.listed, ", "))
	if len(e.cfg.Items) > 0 {
		r.Detail += "; checking " + strings.Join(e.cfg.Items, ", ")
	}
	return r
}

// queryFailure fills r from a failed query: the query's own error as detail (it names the query
// and carries the database's error) and the profile field to correct as fix.
func queryFailure(e *env, r Result, err error) Result {
	r.Status, r.Detail = Fail, err.Error()
	if qe, ok := errors.AsType[*profile.QueryError](err); ok {
		r.Fix = fixField(e, qe.Query)
	}
	return r
}

func fixField(e *env, field string) string {
	return fmt.Sprintf("correct %s in the profile (%s) for this target", field, e.prof.Source())
}

// findings collects what is wrong with one item, the worst status winning.
type findings struct {
	status          Status
	problems, fixes []string
}

func (f *findings) add(s Status, problem, fix string) {
	if f.status == "" || f.status == Pass || s == Fail {
		f.status = s
	}
	f.problems = append(f.problems, problem)
	if fix != "" {
		f.fixes = append(f.fixes, fix)
	}
}

func (f *findings) query(e *env, err error) {
	fix := ""
	if qe, ok := errors.AsType[*profile.QueryError](err); ok {
		fix = fixField(e, qe.Query)
	} else if errors.Is(err, profile.ErrNoItem) {
		fix = "is the item id right? else " + fixField(e, "sql.item")
	}
	f.add(Fail, err.Error(), fix)
}

// itemQueries runs every query of one item and checks its values make sense together.
func itemQueries(ctx context.Context, e *env, item string, limit int) Result {
	r := Result{Group: "profile", Check: "queries " + item}
	sale := e.cfg.SaleID
	var f findings
	row, err := e.pdb.Item(ctx, sale, item)
	if err != nil {
		f.query(e, err)
	} else if row.Quantity < 0 || row.Sold < 0 || row.Sold > row.Quantity {
		f.add(Fail, fmt.Sprintf("sql.item returned quantity %d, sold %d: want 0 <= sold <= quantity", row.Quantity, row.Sold),
			"either "+fixField(e, "sql.item")+", or the item oversold: fsctl reconcile")
	}
	live, err := e.pdb.Live(ctx, sale, item)
	switch {
	case err != nil:
		f.query(e, err)
	case live < 0 || (f.status == "" && live > row.Quantity):
		f.add(Fail, fmt.Sprintf("sql.live returned %d: want 0..quantity %d", live, row.Quantity),
			"either "+fixField(e, "sql.live")+", or the item oversold: fsctl reconcile")
	}
	paid, hasPaid, err := e.pdb.Paid(ctx, sale, item)
	switch {
	case err != nil:
		f.query(e, err)
	case hasPaid && (paid < 0 || paid > live):
		f.add(Fail, fmt.Sprintf("sql.paid returned %d: want 0..live %d", paid, live), fixField(e, "sql.paid"))
	}
	shards, err := e.pdb.Shards(ctx, sale, item)
	if err != nil {
		f.query(e, err)
	} else if shards < 1 {
		f.add(Fail, fmt.Sprintf("sql.shards returned %d: want at least 1", shards), fixField(e, "sql.shards"))
	}
	probe, err := e.pdb.UserOrders(ctx, sale, item, probeUser)
	if err != nil {
		f.query(e, err)
	}
	buyers, hasBuyers, err := e.pdb.LiveBuyers(ctx, sale, item)
	if err != nil {
		f.query(e, err)
	} else if hasBuyers {
		checkLiveBuyers(e, &f, buyers, live, limit)
	}
	r.Detail = fmt.Sprintf("quantity %d, sold %d, live %d", row.Quantity, row.Sold, live)
	if hasPaid {
		r.Detail += fmt.Sprintf(", paid %d", paid)
	}
	r.Detail += fmt.Sprintf(", %d shard(s), %d order(s) of the probe user", shards, len(probe))
	if hasBuyers {
		r.Detail += fmt.Sprintf(", %d live buyer(s)", len(buyers))
	}
	if f.status == "" {
		r.Status = Pass
		return r
	}
	r.Status = f.status
	r.Detail = strings.Join(f.problems, "; ") + " (" + r.Detail + ")"
	r.Fix = strings.Join(f.fixes, "; ")
	return r
}

// checkLiveBuyers compares sql.liveBuyers with sql.live: with one unit per user each live order
// is one buyer; otherwise the units the query counts add up to the live orders. They are read a
// moment apart, so a purchase in between makes them differ: a warning, not a failure.
func checkLiveBuyers(e *env, f *findings, buyers map[string]int64, live int64, limit int) {
	var units int64
	for _, n := range buyers {
		units += n
	}
	got, what := units, "units"
	if limit == 1 {
		got, what = int64(len(buyers)), "buyers"
	}
	if got != live {
		f.add(Warn, fmt.Sprintf("sql.liveBuyers counts %d live %s, sql.live %d orders", got, what, live),
			"run again; if they still differ, "+fixField(e, "sql.liveBuyers")+" (or sql.live)")
	}
}

// templates renders the purchase request and mints a token for a sample buyer.
func templates(e *env) Result {
	p := e.prof
	r := Result{Group: "profile", Check: "templates", Status: Pass}
	item, base := "item", "http://checkout.invalid"
	if len(e.items) > 0 {
		item = e.items[0]
	}
	if len(e.cfg.Servers) > 0 {
		base = e.cfg.Servers[0]
	}
	token, tokenNote := "preflight-sample-token", ""
	m, err := p.Minter(e.cfg.TokenSecret)
	switch {
	case err != nil && p.Token.Type == profile.TokenHS256:
		r.Status, tokenNote = Warn, "no token: "+err.Error()
		r.Fix = "set $" + p.Token.SecretEnv + " to the target's HS256 secret before a blast"
		if p.Token.SecretEnv == "" {
			r.Fix = "set token.secretEnv (or token.secret) to the target's HS256 secret"
		}
	case err != nil:
		r.Status, tokenNote = Fail, "no token: "+err.Error()
		r.Fix = "correct the token section of the profile (" + p.Source() + ")"
	default:
		user := probeUser
		if users := m.Users(); len(users) > 0 {
			user = users[0]
		}
		if token, err = m.Mint(user, e.cfg.SaleID, e.cfg.Now(), p.TokenTTL()); err != nil {
			r.Status, tokenNote = Fail, "minting a token: "+err.Error()
			r.Fix = fixField(e, "token.claims")
		} else {
			tokenNote = fmt.Sprintf("%s token minted", p.Token.Type)
		}
	}
	req, err := p.PurchaseRequest(base, profile.Buy{Sale: e.cfg.SaleID, Item: item, User: probeUser,
		Key: "preflight-probe-key", Token: token, Buyer: 1})
	if err != nil {
		r.Status, r.Detail, r.Fix = Fail, err.Error(), fixField(e, "purchase.url")
		return r
	}
	keys := p.Keys(e.cfg.SaleID, item, 1)[0]
	r.Detail = fmt.Sprintf("%s %s with %d header(s) and a %d-byte body; stock key %s; %s",
		req.Method, req.URL.RequestURI(), len(req.Header), max(req.ContentLength, 0), keys.Stock, tokenNote)
	if keys.Stock == "" {
		r.Status, r.Fix = Fail, fixField(e, "redis.stock")
		r.Detail = "redis.stock renders no key; " + r.Detail
	}
	return r
}
