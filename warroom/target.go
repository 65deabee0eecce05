package warroom

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsctl/fsctl/profile"
)

// A target that is not fsctl serve (a non-deep profile) is read only through what its profile
// declares: its Redis key templates, its SQL, its Kafka names and its HTTP paths. What it does
// not declare is not available, with the reason, never down.

// ProfileTarget is what the items and orders sources of a profile's target share: the item list
// with each item's quantity and shards, read once from the profile's queries (as the bundled
// server's sale is), so the Redis panel keeps going when PostgreSQL goes down later.
type ProfileTarget struct {
	P    *profile.Profile
	Sale string
	// Given are the items to watch; empty: every item sql.items returns.
	Given []string
	DB    *profile.DB

	mu    sync.Mutex
	items []profileItem
}

type profileItem struct {
	id       string
	quantity int64
	shards   int
}

// itemList returns the items with their quantity and shards, reading them on first success.
func (t *ProfileTarget) itemList(ctx context.Context) ([]profileItem, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.items != nil {
		return t.items, nil
	}
	ids := t.Given
	if len(ids) == 0 {
		var err error
		if ids, err = t.DB.Items(ctx, t.Sale); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("sql.items returned no item for sale %s", t.Sale)
		}
	}
	items := make([]profileItem, 0, len(ids))
	for _, id := range ids {
		row, err := t.DB.Item(ctx, t.Sale, id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", id, err)
		}
		shards, err := t.DB.Shards(ctx, t.Sale, id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", id, err)
		}
		items = append(items, profileItem{id: id, quantity: row.Quantity, shards: shards})
	}
	t.items = items
	return items, nil
}

// ProfileInventory reads every item's counters with the profile's key templates: the stock left
// summed over shards, the buyers and the holds (0 when the profile has no holds key).
type ProfileInventory struct {
	Target *ProfileTarget
	Stocks *profile.Stocks
}

// Inventory returns every item's stock, buyers and holds; a stock key that does not exist is an
// error (an item never preheated is not sold out).
func (r *ProfileInventory) Inventory(ctx context.Context) ([]ItemStock, error) {
	items, err := r.Target.itemList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ItemStock, 0, len(items))
	for _, it := range items {
		inv, err := r.Stocks.Inventory(ctx, r.Target.Sale, it.id, it.shards)
		if err != nil {
			return nil, err
		}
		if missing := inv.Missing(); len(missing) > 0 {
			return nil, fmt.Errorf("item %s: redis has no %s (is the item preheated?)", it.id, strings.Join(missing, ", "))
		}
		out = append(out, ItemStock{ID: it.id, Quantity: it.quantity, Remaining: inv.Stock, Held: inv.Holds, Buyers: inv.Buyers, Shards: it.shards})
	}
	return out, nil
}

// ProfileOrders reads every item's quantity, sold counter, live and paid orders with the
// profile's queries.
type ProfileOrders struct {
	Target *ProfileTarget
}

// Orders returns every item's counts; Paid is -1 when the profile has no paid query. A failed
// query's error names it (sql.live, ...) and carries the database's own error.
func (o *ProfileOrders) Orders(ctx context.Context) ([]ItemOrders, error) {
	items, err := o.Target.itemList(ctx)
	if err != nil {
		return nil, err
	}
	db, sale := o.Target.DB, o.Target.Sale
	out := make([]ItemOrders, 0, len(items))
	for _, it := range items {
		row, err := db.Item(ctx, sale, it.id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.id, err)
		}
		live, err := db.Live(ctx, sale, it.id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.id, err)
		}
		paid, ok, err := db.Paid(ctx, sale, it.id)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", it.id, err)
		}
		if !ok {
			paid = -1
		}
		out = append(out, ItemOrders{ID: it.id, Quantity: row.Quantity, Sold: row.Sold, Live: live, Paid: paid, Profiled: true})
	}
	return out, nil
}

// openProfile builds the sources of a target read through a non-deep profile: items from its key
// templates and queries, orders from its queries, the pipeline from its kafka names, the servers'
// panels only when it declares fsctl's metrics endpoint and admin API.
func openProfile(e Endpoints, p *profile.Profile) (Sources, func(), error) {
	src := Sources{Sale: e.Sale, Profile: p.Name, Absent: map[string]string{}}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) (Sources, func(), error) {
		closeAll()
		return Sources{}, nil, err
	}
	var target *ProfileTarget
	if e.PostgresURL != "" {
		// pgxpool connects on first use, so a database that is down shows as down, not as a crash.
		pool, err := pgxpool.New(context.Background(), e.PostgresURL)
		if err != nil {
			return fail(fmt.Errorf("--postgres-url: %w", err))
		}
		closers = append(closers, pool.Close)
		target = &ProfileTarget{P: p, Sale: e.Sale, Given: e.Items, DB: profile.NewDB(p, pool)}
		src.Orders = &ProfileOrders{Target: target}
	} else {
		src.Absent["orders"], src.Absent["items"] = noPostgres, noPostgres+" (the items and quantities come from sql.items and sql.item)"
	}
	if e.RedisURL == "" {
		src.Absent["items"] = noRedis
	} else if target != nil {
		rdb, err := newRedis(e.RedisURL)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, func() { _ = rdb.Close() })
		src.Inventory = &ProfileInventory{Target: target, Stocks: profile.NewStocks(p, rdb)}
	}
	client := newHTTPClient()
	closers = append(closers, client.CloseIdleConnections)
	switch {
	case len(e.Servers) == 0:
		noServers(src.Absent, "no checkout server given")
	case p.HTTP.Metrics == "":
		for _, panel := range []string{"traffic", "admission", "payment"} {
			src.Absent[panel] = "the profile declares no metrics endpoint (http.metrics)"
		}
	default:
		sc := NewScraperAt(e.Servers, p.HTTP.Metrics, e.Sale, client)
		src.Traffic, src.Admission, src.Payment = sc, sc, sc
	}
	switch {
	case len(e.Servers) == 0:
	case p.HTTP.Admin == "":
		src.Absent["control"] = "the profile declares no admin API (http.admin)"
	case e.AdminToken == "":
		src.Absent["control"] = "no admin token given"
	default:
		a := NewAdminAPI(e.Servers[0], e.AdminToken, e.Sale, client)
		a.Prefix = strings.TrimSuffix(p.HTTP.Admin, "/")
		a.SalePage = p.Endpoint("", p.HTTP.SalePage, e.Sale) // "" leaves the paused flag unread
		src.Control = a
	}
	profilePipeline(&src, &closers, e, p)
	return src, closeAll, nil
}

// profilePipeline reads the order log the profile names (flags override its names); without a
// topic and a group there is nothing to measure lag against.
func profilePipeline(src *Sources, closers *[]func(), e Endpoints, p *profile.Profile) {
	topic, dlq, group := or(e.OrdersTopic, p.Kafka.Topic), or(e.DeadLetterTopic, p.Kafka.DeadLetter), or(e.ConsumerGroup, p.Kafka.Group)
	switch {
	case len(e.Brokers) == 0:
		src.Absent["pipeline"] = noKafka
	case topic == "" || group == "":
		src.Absent["pipeline"] = "the profile declares no kafka topic and group (kafka.topic, kafka.group)"
	default:
		kp := NewKafkaPipeline(e.Brokers, topic, dlq, group)
		src.Pipeline = kp
		*closers = append(*closers, kp.Close)
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
