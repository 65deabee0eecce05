package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/profile"
)

// probeUser is the user the userOrders query and the sample purchase are rendered for: nobody
// real, so its orders are none.
const probeUser = "fsctl-preflight-probe"

// checkProfile: the target profile fits the live target — every query runs and returns sane
// values, every template renders and a token can be minted. It runs for every profile, the
// bundled one included, so the profile every other command reads the target through is verified
// before the sale.
func checkProfile(ctx context.Context, e *env) []finding.Finding {
	out := []finding.Finding{templates(e)}
	if e.pdb == nil {
		return append(out, needs("profile", "PostgreSQL")...)
	}
	out = append(out, itemsResult(e))
	limit, err := e.pdb.PerUserLimit(ctx, e.cfg.SaleID)
	lr := finding.Finding{Group: "profile", Check: "per-user limit", Status: finding.Pass, Detail: fmt.Sprintf("%d per user", limit)}
	switch {
	case err != nil:
		lr = queryFailure(e, lr, err)
	case limit < 1:
		lr.Status, lr.Detail = finding.Fail, fmt.Sprintf("sql.perUserLimit returned %d: want at least 1", limit)
		lr.Fix = fixField(e, "sql.perUserLimit")
	}
	out = append(out, lr)
	for _, item := range e.items {
		out = append(out, itemQueries(ctx, e, item, limit))
	}
	return out
}

func itemsResult(e *env) finding.Finding {
	r := finding.Finding{Group: "profile", Check: "sql.items"}
	if e.itemsErr != nil {
		r = queryFailure(e, r, e.itemsErr)
		if r.Fix == "" {
			r.Fix = "is --sale right? else " + fixField(e, "sql.items")
		}
		return r
	}
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("%d item(s): %s", len(e.listed), strings.Join(e.listed, ", "))
	if len(e.cfg.Items) > 0 {
		r.Detail += "; checking " + strings.Join(e.cfg.Items, ", ")
	}
	return r
}

// queryFailure fills r from a failed query: the query's own error as detail (it names the query
// and carries the database's error) and the profile field to correct as fix.
func queryFailure(e *env, r finding.Finding, err error) finding.Finding {
	r.Status, r.Detail = finding.Fail, err.Error()
	if qe, ok := errors.AsType[*profile.QueryError](err); ok {
		r.Fix = fixField(e, qe.Query)
	}
	return r
}

func fixField(e *env, field string) string {
	return fmt.Sprintf("correct %s in the profile (%s) for this target", field, e.prof.Source())
}

// itemQueries runs every query of one item and checks its values make sense together.
func itemQueries(ctx context.Context, e *env, item string, limit int) finding.Finding {
	ip := e.pdb.ProbeItem(ctx, e.cfg.SaleID, item, probeUser, limit)
	r := finding.Finding{Group: "profile", Check: "queries " + item, Status: finding.Pass,
		Detail: fmt.Sprintf("quantity %d, sold %d, live %d", ip.Quantity, ip.Sold, ip.Live)}
	if ip.HasPaid {
		r.Detail += fmt.Sprintf(", paid %d", ip.Paid)
	}
	r.Detail += fmt.Sprintf(", %d shard(s), %d order(s) of the probe user", ip.Shards, ip.ProbeOrders)
	if ip.HasBuyers {
		r.Detail += fmt.Sprintf(", %d live buyer(s)", len(ip.Buyers))
	}
	if len(ip.Problems) == 0 {
		return r
	}
	var problems, fixes []string
	r.Status = finding.Warn
	for _, pr := range ip.Problems {
		if !pr.Warn {
			r.Status = finding.Fail
		}
		problems = append(problems, pr.Err.Error())
		fixes = append(fixes, problemFix(e, pr))
	}
	r.Detail = strings.Join(problems, "; ") + " (" + r.Detail + ")"
	r.Fix = strings.Join(fixes, "; ")
	return r
}

// problemFix says what to do about one query's problem.
func problemFix(e *env, pr profile.Problem) string {
	switch {
	case pr.NoItem():
		return "is the item id right? else " + fixField(e, pr.Field)
	case pr.Warn:
		return "run again; if they still differ, " + fixField(e, pr.Field) + " (or sql.live)"
	case !pr.Query && (pr.Field == "sql.item" || pr.Field == "sql.live"):
		return "either " + fixField(e, pr.Field) + ", or the item oversold: fsctl reconcile"
	}
	return fixField(e, pr.Field)
}

// templates renders the purchase request and mints a token for a sample buyer.
func templates(e *env) finding.Finding {
	p := e.prof
	r := finding.Finding{Group: "profile", Check: "templates", Status: finding.Pass}
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
		r.Status, tokenNote = finding.Warn, "no token: "+err.Error()
		r.Fix = "set $" + p.Token.SecretEnv + " to the target's HS256 secret before a blast"
		if p.Token.SecretEnv == "" {
			r.Fix = "set token.secretEnv (or token.secret) to the target's HS256 secret"
		}
	case err != nil:
		r.Status, tokenNote = finding.Fail, "no token: "+err.Error()
		r.Fix = "correct the token section of the profile (" + p.Source() + ")"
	default:
		user := probeUser
		if users := m.Users(); len(users) > 0 {
			user = users[0]
		}
		if token, err = m.Mint(user, e.cfg.SaleID, e.cfg.Now(), p.TokenTTL()); err != nil {
			r.Status, tokenNote = finding.Fail, "minting a token: "+err.Error()
			r.Fix = fixField(e, "token.claims")
		} else {
			tokenNote = fmt.Sprintf("%s token minted", p.Token.Type)
		}
	}
	req, err := p.PurchaseRequest(base, profile.Buy{Sale: e.cfg.SaleID, Item: item, User: probeUser,
		Key: "preflight-probe-key", Token: token, Buyer: 1})
	if err != nil {
		r.Status, r.Detail, r.Fix = finding.Fail, err.Error(), fixField(e, "purchase.url")
		return r
	}
	keys := p.Keys(e.cfg.SaleID, item, 1)[0]
	r.Detail = fmt.Sprintf("%s %s with %d header(s) and a %d-byte body; stock key %s; %s",
		req.Method, req.URL.RequestURI(), len(req.Header), max(req.ContentLength, 0), keys.Stock, tokenNote)
	if keys.Stock == "" {
		r.Status, r.Fix = finding.Fail, fixField(e, "redis.stock")
		r.Detail = "redis.stock renders no key; " + r.Detail
	}
	return r
}
