package profile

import (
	"context"
	"errors"
	"fmt"
)

// Problem is one query of an item that failed, or returned a value that cannot be right.
type Problem struct {
	// Field is the query's field (sql.live).
	Field string
	// Warn marks a problem a moment between two reads can explain.
	Warn bool
	// Query is true when the query itself failed (Err is then a *QueryError or ErrNoItem);
	// false when it ran and its value is not sane.
	Query bool
	Err   error
}

// ItemProbe is every per-item query of a profile, run once and judged: what preflight's profile
// group and `fsctl profile check` both report.
type ItemProbe struct {
	Item string
	ItemRow
	Live, Paid int64
	HasPaid    bool
	Shards     int
	// ProbeOrders is how many orders the userOrders query found for the probe user.
	ProbeOrders int
	// ItemOrders and ItemBuyers are how many orders the itemOrders query found, and of how many
	// users (when the profile declares it).
	ItemOrders, ItemBuyers int
	// Buyers are the live buyers (HasBuyers: the profile has the query).
	Buyers    map[string]int64
	HasBuyers bool
	Problems  []Problem
}

// Problem returns the problem of one field, if any.
func (ip ItemProbe) Problem(field string) (Problem, bool) {
	for _, p := range ip.Problems {
		if p.Field == field {
			return p, true
		}
	}
	return Problem{}, false
}

// ProbeItem runs every per-item query for item and checks their values make sense together:
// 0 ≤ sold ≤ quantity, live within 0..quantity, paid within 0..live, at least one shard, the user
// orders query answering with the columns id and status (for user, who should have none), and
// the live buyers adding up to the live orders (buyers when limit is 1, units otherwise).
func (d *DB) ProbeItem(ctx context.Context, sale, item, user string, limit int) ItemProbe {
	ip := ItemProbe{Item: item, Shards: 1}
	failed := func(field string, err error) {
		ip.Problems = append(ip.Problems, Problem{Field: field, Query: true, Err: err})
	}
	insane := func(field, format string, args ...any) {
		ip.Problems = append(ip.Problems, Problem{Field: field, Err: fmt.Errorf(format, args...)})
	}
	var err error
	if ip.ItemRow, err = d.Item(ctx, sale, item); err != nil {
		failed("sql.item", err)
	} else if ip.Quantity < 0 || ip.Sold < 0 || ip.Sold > ip.Quantity {
		insane("sql.item", "sql.item returned quantity %d, sold %d: want 0 <= sold <= quantity", ip.Quantity, ip.Sold)
	}
	rowOK := err == nil
	ip.Live, err = d.Live(ctx, sale, item)
	liveOK := err == nil
	if err != nil {
		failed("sql.live", err)
	} else if ip.Live < 0 || (rowOK && ip.Live > ip.Quantity) {
		insane("sql.live", "sql.live returned %d: want 0..quantity %d", ip.Live, ip.Quantity)
	}
	if ip.Paid, ip.HasPaid, err = d.Paid(ctx, sale, item); err != nil {
		failed("sql.paid", err)
	} else if ip.HasPaid && (ip.Paid < 0 || (liveOK && ip.Paid > ip.Live)) {
		insane("sql.paid", "sql.paid returned %d: want 0..live %d", ip.Paid, ip.Live)
	}
	if ip.Shards, err = d.Shards(ctx, sale, item); err != nil {
		failed("sql.shards", err)
	} else if ip.Shards < 1 {
		insane("sql.shards", "sql.shards returned %d: want at least 1", ip.Shards)
	}
	orders, err := d.UserOrders(ctx, sale, item, user)
	if err != nil {
		failed("sql.userOrders", err)
	}
	ip.ProbeOrders = len(orders)
	if byUser, _, err := d.ItemOrders(ctx, sale, item); err != nil {
		failed("sql.itemOrders", err)
	} else {
		ip.ItemBuyers = len(byUser)
		for _, os := range byUser {
			ip.ItemOrders += len(os)
		}
	}
	if ip.Buyers, ip.HasBuyers, err = d.LiveBuyers(ctx, sale, item); err != nil {
		failed("sql.liveBuyers", err)
	} else if ip.HasBuyers {
		var units int64
		for _, n := range ip.Buyers {
			units += n
		}
		got, what := units, "units"
		if limit == 1 {
			got, what = int64(len(ip.Buyers)), "buyers"
		}
		if liveOK && got != ip.Live { // a failed sql.live says so itself
			// Read a moment apart: a purchase in between makes them differ.
			ip.Problems = append(ip.Problems, Problem{Field: "sql.liveBuyers", Warn: true,
				Err: fmt.Errorf("sql.liveBuyers counts %d live %s, sql.live %d orders", got, what, ip.Live)})
		}
	}
	return ip
}

// NoItem reports whether a problem is an item the item query does not know.
func (p Problem) NoItem() bool { return errors.Is(p.Err, ErrNoItem) }
