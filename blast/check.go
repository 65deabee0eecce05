package blast

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// answered reports whether an outcome is the idempotency layer's answer to a key, which every
// try of the key must repeat. Failures, admission refusals, a paused or unopened sale and bad
// requests are answered before the key is looked at, so they may change from try to try.
func answered(c outcome.Code) bool {
	return c == outcome.Reserved || c == outcome.SoldOut || c == outcome.AlreadyPurchased
}

// grant is one reservation a buyer was told about: a key's order (the key itself when the
// target names no order id), so retries and replays of one key count once.
func grant(r loadgen.Record) string {
	if r.OrderID != "" {
		return r.OrderID
	}
	return r.User + "\x00" + r.Key
}

// CheckResponses checks what buyers were told: per item no more reservations than stock, no
// buyer with more than the per-user limit, nor, in a sale with a per-sale limit, more than it
// across the sale's items, and every try of one key answered alike. An item missing from limits
// is not checked for the first three.
func CheckResponses(recs []loadgen.Record, limits map[loadgen.Target]loadgen.ItemLimit) []finding.Finding {
	perItem := map[loadgen.Target]map[string]struct{}{} // item → its distinct grants
	type userGrant struct {
		t           loadgen.Target
		user, grant string
	}
	held := map[userGrant]struct{}{} // each buyer's distinct grants of each item
	type keyID struct{ user, key string }
	// A key's first answer, as its record's index: sized for a key a record, the burst's case
	// (a map of whole records grown from empty was most of a 50,000-buyer report's check).
	first := make(map[keyID]int, len(recs))
	var oversell, overLimit, mismatch []string
	for i := range recs {
		r := &recs[i]
		if r.Outcome == outcome.Reserved {
			g := grant(*r)
			if perItem[r.Target] == nil {
				perItem[r.Target] = map[string]struct{}{}
			}
			perItem[r.Target][g] = struct{}{}
			held[userGrant{r.Target, r.User, g}] = struct{}{}
		}
		if !answered(r.Outcome) {
			continue
		}
		k := keyID{r.User, r.Key}
		at, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		if f := &recs[at]; f.Outcome != r.Outcome || f.OrderID != r.OrderID {
			mismatch = append(mismatch, fmt.Sprintf("%s key %s: try %d got %s %s, try %d got %s %s",
				r.User, r.Key, f.Attempt, f.Outcome, f.OrderID, r.Attempt, r.Outcome, r.OrderID))
		}
	}
	perUser := map[loadgen.Target]map[string]int{} // item → buyer → distinct grants
	for k := range held {
		if perUser[k.t] == nil {
			perUser[k.t] = map[string]int{}
		}
		perUser[k.t][k.user]++
	}
	targets := make([]loadgen.Target, 0, len(perItem))
	for t := range perItem {
		targets = append(targets, t)
	}
	slices.SortFunc(targets, func(a, b loadgen.Target) int { return strings.Compare(a.String(), b.String()) })
	for _, t := range targets {
		lim, ok := limits[t]
		if !ok {
			continue
		}
		if n := int64(len(perItem[t])); n > lim.Stock {
			oversell = append(oversell, fmt.Sprintf("%s: %d reservations for %d units", t, n, lim.Stock))
		}
		if lim.PerUser <= 0 {
			continue
		}
		users := make([]string, 0)
		for u, n := range perUser[t] {
			if n > lim.PerUser {
				users = append(users, fmt.Sprintf("%s: %s reserved %d, limit %d", t, u, n, lim.PerUser))
			}
		}
		slices.Sort(users)
		overLimit = append(overLimit, users...)
	}
	out := []finding.Finding{
		finding.Verdict("no oversell (responses)", oversell),
		finding.Verdict("per-user limit (responses)", overLimit),
	}
	if saleLimit := checkPerSale(perUser, limits); saleLimit != nil {
		out = append(out, *saleLimit)
	}
	return append(out, finding.Verdict("same key, same answer", mismatch))
}

// checkPerSale counts each buyer's reservations across the items of a sale with a per-sale limit
// (perUser: item → user → distinct grants); nil when no checked sale has one.
func checkPerSale(perUser map[loadgen.Target]map[string]int, limits map[loadgen.Target]loadgen.ItemLimit) *finding.Finding {
	limited := map[string]int{}
	for t, lim := range limits {
		if lim.PerSale > 0 {
			limited[t.SaleID] = lim.PerSale
		}
	}
	if len(limited) == 0 {
		return nil
	}
	held := map[[2]string]int{}
	for t, users := range perUser {
		if _, ok := limited[t.SaleID]; !ok {
			continue
		}
		for u, n := range users {
			held[[2]string{t.SaleID, u}] += n
		}
	}
	var over []string
	for k, n := range held {
		if lim := limited[k[0]]; n > lim {
			over = append(over, fmt.Sprintf("sale %s: %s reserved %d across its items, limit %d", k[0], k[1], n, lim))
		}
	}
	slices.Sort(over)
	f := finding.Verdict("per-sale limit (responses)", over)
	return &f
}
