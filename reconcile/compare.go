package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// maxListed bounds how many buyers one finding names.
const maxListed = 10

// noFix is the advice of a finding whose repair the profile does not declare.
const noFix = "left alone: the profile declares no fix for this"

// itemRead is one read of one item, and what it shows.
type itemRead struct {
	state profile.ItemState
	// redisBuyers and pgBuyers map user → units; hasBuyers is false unless the profile declares
	// both redis.buyers and sql.liveBuyers.
	redisBuyers, pgBuyers map[string]int64
	hasBuyers             bool
	// lag is the order consumer's lag: 0 when nothing is in flight (or the profile has no order
	// log), -1 when the log is declared but could not be read.
	lag int64
	// ordered are the findings of fsctl serve's order-by-order read (none for any other
	// target), which the unit count waits for.
	ordered  []Finding
	inFlight int
	findings []readFinding
	// row is the item's report row as the reads fill it.
	row ItemReport
}

// readFinding is a Finding with the buyers it is about, so a second read can keep only the
// buyers both reads found.
type readFinding struct {
	Finding
	users map[string]int64
}

// explains reports whether orders on their way through the log can account for n units or buyers
// that Redis has and PostgreSQL does not yet.
func (it itemRead) explains(n int64) bool { return it.lag < 0 || (it.lag > 0 && n <= it.lag) }

// analyze compares one read of an item and counts what is in flight: fsctl serve's book order by
// order, then the item's counters (package verify's rules), then the buyers where the profile
// declares them in units.
func (r *run) analyze(it *itemRead) []readFinding {
	s := it.state
	var out []readFinding
	for _, f := range it.ordered {
		out = append(out, readFinding{Finding: f})
	}
	for _, f := range invariantFindings(verify.Check(verify.FromState(s)), func(f *Finding, p verify.Problem) bool {
		switch p.Invariant {
		case verify.MissingStock:
			f.Fix = "left alone: restore it by hand (quantity − live orders); on fsctl serve, reconcile --rebuild-redis restores the sale"
		case verify.SoldCounter:
			f.Fix = noFix + " (fix.sold)"
			if r.p.Fix.Sold != "" {
				f.Fix = fmt.Sprintf("run fix.sold (sold %d → %d live orders)", s.Sold, s.Live)
				f.Apply = r.fixSold(s.Item)
			}
		case verify.Units:
			return r.units(it, f, p.Delta)
		case verify.Holds:
			return false // the holds one by one, or the buyers and the unit count, say what a stray hold costs
		}
		return true
	}) {
		out = append(out, readFinding{Finding: f})
	}
	if it.hasBuyers {
		extra, missing := map[string]int64{}, map[string]int64{}
		for u, n := range it.redisBuyers {
			if d := n - it.pgBuyers[u]; d > 0 {
				extra[u] = d
			}
		}
		for u, n := range it.pgBuyers {
			if d := n - it.redisBuyers[u]; d > 0 {
				missing[u] = d
			}
		}
		if n := sum(extra); n > 0 && it.explains(n) {
			it.inFlight = max(it.inFlight, int(n))
		} else if n > 0 {
			out = append(out, r.buyersFinding(*it, KindBuyerWithoutOrder, extra))
		}
		if len(missing) > 0 {
			out = append(out, r.buyersFinding(*it, KindOrderWithoutBuyer, missing))
		}
	}
	return out
}

// units offers the repair of a unit count that is off by lost (> 0: Redis sells fewer units than
// it has; < 0: it would sell some twice), or drops the finding when orders in flight account for
// it.
func (r *run) units(it *itemRead, f *Finding, lost int64) bool {
	if r.book != nil {
		return r.book.units(r, it, f, lost)
	}
	s := it.state
	keys := s.Inventory.Shards
	if lost > 0 && it.explains(lost) {
		it.inFlight = max(it.inFlight, int(lost))
		return false
	}
	switch {
	case verify.GaveOutTooMany(verify.FromState(s)):
		f.Fix = leftOversold
	case r.p.Fix.Stock != profile.Recount:
		f.Fix = noFix + " (fix.stock)"
	case len(keys) != 1:
		f.Fix = "left alone: a sharded item's counters are set by hand"
	case it.lag < 0:
		f.Fix = "left alone: the order log's lag is unknown (give --kafka-brokers); orders may be in flight"
	case it.lag > 0:
		f.Fix = fmt.Sprintf("left alone: %d orders in flight; run again once the log has drained", it.lag)
	default:
		to, terms := verify.Expected(verify.FromState(s))
		f.Fix = fmt.Sprintf("recount %s from %d to %d (%s), only if it still holds %d", keys[0].Keys.Stock, s.Stock, to, terms, s.Stock)
		f.Apply = r.setStock(keys[0].Keys.Stock, s.Stock, to)
	}
	return true
}

// leftOversold is the advice of a unit count that is off because units were given out twice.
const leftOversold = "left alone: oversold, fix by hand"

// buyersFinding reports the buyers Redis has without a live order (extra) or lacks for one.
func (r *run) buyersFinding(it itemRead, kind string, users map[string]int64) readFinding {
	names := sortedKeys(users)
	listed := names[:min(len(names), maxListed)]
	more := ""
	if len(names) > len(listed) {
		more = fmt.Sprintf(" and %d more", len(names)-len(listed))
	}
	key := it.state.Inventory.Shards[0].Keys.Buyers
	f := disagreement(kind, "", "")
	if kind == KindBuyerWithoutOrder {
		f.Detail = fmt.Sprintf("%d buyer(s) in Redis without a live order: %s%s", len(names), strings.Join(listed, ", "), more)
	} else {
		f.Detail = fmt.Sprintf("%d buyer(s) with a live order unknown to Redis: %s%s", len(names), strings.Join(listed, ", "), more)
	}
	switch {
	case r.p.Fix.Buyers != profile.Recount:
		f.Fix = noFix + " (fix.buyers)"
	case len(it.state.Inventory.Shards) != 1:
		f.Fix = "left alone: the profile cannot say which shard a buyer lives on"
	case kind == KindBuyerWithoutOrder && it.lag != 0:
		f.Fix = "left alone: orders are in flight (or the log's lag is unknown); run again once it has drained"
	case kind == KindBuyerWithoutOrder:
		f.Fix = fmt.Sprintf("recount: remove %d buyer(s) from %s", len(names), key)
		f.Apply = r.removeBuyers(key, names)
	default:
		f.Fix = fmt.Sprintf("recount: add %d buyer(s) to %s", len(names), key)
		f.Apply = r.addBuyers(key, names)
	}
	return readFinding{Finding: f, users: users}
}

// confirm keeps the findings of the second read that the first read had too; a finding about
// buyers keeps only the buyers both reads name.
func (r *run) confirm(first []readFinding, second itemRead) []readFinding {
	seen := map[string]readFinding{}
	for _, f := range first {
		seen[f.key()] = f
	}
	var out []readFinding
	for _, f := range second.findings {
		prev, ok := seen[f.key()]
		if !ok {
			continue
		}
		if f.Check == KindUnits && f.Apply != nil && f.Detail != prev.Detail {
			// The counters moved between the reads: purchases are running, and a recount from
			// this read could give back a unit whose order is on its way.
			f.Apply = nil
			f.Fix = "left alone: the stock or the live orders moved between the two reads (a sale under way?); run again when it is quiet"
		}
		if f.users != nil {
			both := map[string]int64{}
			for u, n := range f.users {
				if prev.users[u] > 0 {
					both[u] = min(n, prev.users[u])
				}
			}
			if len(both) == 0 {
				continue
			}
			f = r.buyersFinding(second, f.Check, both)
		}
		out = append(out, f)
	}
	return out
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
